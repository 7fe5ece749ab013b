package io.virtio4j.vhost.backend;

import io.virtio4j.vhost.frontend.VhostUserFrontend;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.fail;

/** A {@link VhostUserBackendEndpoint} serving a {@link FakeDevice} on a temporary socket, on its own thread. */
final class TestServer implements AutoCloseable {
    private static final long JOIN_MILLIS = 20_000;
    private static final long CONNECT_NANOS = 20_000_000_000L;

    final FakeDevice device;
    private final Path dir;
    private final Path path;
    private final VhostUserBackendEndpoint server;
    private final Thread thread;
    private volatile Throwable failure;

    TestServer(int queues) {
        this.device = new FakeDevice(queues);
        try {
            this.dir = Files.createTempDirectory("v4j-vhost");
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

    Path path() {
        return path;
    }

    VhostUserFrontend connect() {
        return connectWithRetry(path);
    }

    /** Connects, retrying while nothing listens at {@code path} yet. */
    static VhostUserFrontend connectWithRetry(Path path) {
        try {
            return VhostUserFrontend.connect(path, Duration.ofNanos(CONNECT_NANOS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while connecting", e);
        }
    }

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
