package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.backend.VirtioDevice;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * A {@link NetDevice} served by a {@link VhostUserBackendEndpoint} on a socket in a fresh temporary directory, on a
 * background thread; {@link #close()} stops the server and joins the thread (failing when it does not end).
 */
final class NetBackend implements AutoCloseable {
    static final byte[] MAC = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
    private static final long JOIN_MILLIS = 20_000;

    private final VirtioDevice device;
    private final Path dir;
    private final Path path;
    private final VhostUserBackendEndpoint server;
    private final Thread thread;
    private volatile Throwable failure;

    private NetBackend(VirtioDevice device) {
        this.device = device;
        try {
            this.dir = Files.createTempDirectory("v4j-net");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.path = dir.resolve("vhost.sock");
        this.server = new VhostUserBackendEndpoint(() -> new VhostUserSession(device, BackendOptions.defaults()));
        this.thread = new Thread(() -> {
            try {
                server.listen(path);
            } catch (Throwable t) {
                failure = t;
            }
        }, "vhost-user-server-" + dir.getFileName());
        this.thread.setDaemon(true);
        this.thread.start();
    }

    static NetBackend start(NetDevice.Options options) {
        return new NetBackend(new NetDevice(options));
    }

    /** Serves {@code device}, whatever it is (a test's own). */
    static NetBackend serving(VirtioDevice device) {
        return new NetBackend(device);
    }

    static NetBackend start(int pairs, NetMode mode, NotificationMode notification) {
        return start(options(pairs, mode, notification));
    }

    static NetDevice.Options options(int pairs, NetMode mode, NotificationMode notification) {
        return new NetDevice.Options(pairs, mode, notification, 20_000, 64, new int[0], MAC, 1500);
    }

    NetDevice device() {
        return (NetDevice) device;
    }

    Path path() {
        return path;
    }

    /** The server thread is still serving (it ends only on close or on an error of its own). */
    void assertServing() {
        if (failure != null) {
            throw new AssertionError("vhost-user server failed", failure);
        }
        if (!thread.isAlive()) {
            fail("vhost-user server thread ended");
        }
    }

    @Override
    public void close() {
        server.close();
        try {
            thread.join(JOIN_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            Files.deleteIfExists(path);
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (thread.isAlive()) {
            fail("vhost-user server thread did not end within " + JOIN_MILLIS + " ms of close()");
        }
        if (failure != null) {
            throw new AssertionError("vhost-user server failed", failure);
        }
    }
}
