package io.virtio4j.vhost.backend;

import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

class VhostUserBackendEndpointTest {
    @TempDir
    Path dir;

    /** Regression: close() used to close the listening fd only, which does not wake a thread in accept(). */
    @Test
    void closeStopsServeBlockedInAccept() throws Exception {
        Path path = dir.resolve("s.sock");
        VhostUserBackendEndpoint server = new VhostUserBackendEndpoint(() -> new VhostUserSession(new FakeDevice(2), BackendOptions.defaults()));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                server.listen(path);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        t.start();
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                // Two connections one after the other: after the first is served the server is back in accept().
                for (int i = 0; i < 2; i++) {
                    try (VhostUserFrontend fe = TestServer.connectWithRetry(path)) {
                        assertEquals(FakeDevice.FEATURES | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES),
                                fe.getFeatures());
                    }
                }
            });
            // Wait (watchdog above) until the server thread is blocked in accept(), the case close() must handle.
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                while (!inAccept(t)) {
                    Thread.sleep(1);
                }
            });
        } finally {
            server.close();
            // before the listening thread runs its own clean-up: a process halting after its shutdown hook has
            // only close() to remove the file
            assertFalse(Files.exists(path), "socket file still there when close() returned");
            t.join(20_000);
        }
        assertFalse(t.isAlive(), "listen() still running 20 s after close()");
        assertNull(failure.get());
        assertFalse(Files.exists(path), "socket file removed");
    }

    /**
     * A listener handed down by the parent (--fd): served one front-end after another like one of its own; close()
     * stops it blocked in accept, and its socket file, the parent's, stays.
     */
    @Test
    void anInheritedListenerIsServedAndItsSocketFileLeftToItsMaker() throws Exception {
        Path path = dir.resolve("inherited.sock");
        int handedDown = UnixServerSocket.listen(path, 1).fileDescriptor().release();
        UnixServerSocket inherited = UnixServerSocket.adopt(handedDown);
        VhostUserBackendEndpoint server = new VhostUserBackendEndpoint(() -> new VhostUserSession(new FakeDevice(2), BackendOptions.defaults()));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                server.listen(inherited);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        t.start();
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                for (int i = 0; i < 2; i++) {
                    try (VhostUserFrontend fe = TestServer.connectWithRetry(path)) {
                        assertEquals(FakeDevice.FEATURES | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES),
                                fe.getFeatures());
                    }
                }
                while (!inAccept(t)) {
                    Thread.sleep(1);
                }
            });
        } finally {
            server.close();
            t.join(20_000);
        }
        assertFalse(t.isAlive(), "listen() still running 20 s after close()");
        assertNull(failure.get());
        assertFalse(inherited.fileDescriptor().isOpen(), "the listener is closed when serving ends");
        assertTrue(Files.exists(path), "the parent made the socket file: it stays for the parent to remove");
    }

    private static boolean inAccept(Thread t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().endsWith("UnixServerSocket") && e.getMethodName().equals("accept")) {
                return true;
            }
        }
        return false;
    }
}
