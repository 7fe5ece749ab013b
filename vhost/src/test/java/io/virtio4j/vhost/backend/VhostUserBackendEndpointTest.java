package io.virtio4j.vhost.backend;

import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.testkit.OpenFds;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Deque;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

class VhostUserBackendEndpointTest {
    /** What the {@link FakeDevice} a served front-end talks to offers. */
    private static final long FEATURES = FakeDevice.FEATURES
            | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);

    @TempDir
    Path dir;

    /** Regression: close() used to close the listening fd only, which does not wake a thread in accept(). */
    @Test
    void closeStopsServeBlockedInAccept() throws Exception {
        Path path = dir.resolve("s.sock");
        VhostUserBackendEndpoint server = fakeDeviceServer();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = serving(() -> server.listen(path), failure);
        t.start();
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                servesTwoInTurn(path);
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
        VhostUserBackendEndpoint server = fakeDeviceServer();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = serving(() -> server.listen(inherited), failure);
        t.start();
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                servesTwoInTurn(path);
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

    /**
     * The process out of descriptors (EMFILE) when a front-end connects: accept fails (or, should a descriptor have
     * come free meanwhile, the duplicate the listener watches the connection with), which is no reason to stop
     * listening for good. The listener logs it, waits and tries again, and once descriptors are free the front-end
     * is served (the one waiting in the backlog, or one that connects again after being dropped). The table is
     * filled for real (duplicates up to the limit), for as short as it takes.
     */
    @Test
    void anAcceptFailingForLackOfDescriptorsIsRetriedAndTheFrontEndServed() throws Exception {
        Path path = dir.resolve("emfile.sock");
        VhostUserBackendEndpoint server = fakeDeviceServer();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = serving(() -> server.listen(path), failure);
        CountDownLatch acceptFailed = new CountDownLatch(1);
        AtomicBoolean dropped = new AtomicBoolean();
        Handler seen = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getMessage().contains("EMFILE")) {
                    dropped.compareAndSet(false, r.getMessage().contains("dropped"));
                    acceptFailed.countDown();
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger log = Logger.getLogger(VhostUserBackendEndpoint.class.getName());
        log.addHandler(seen);
        Deque<FileDescriptor> fillers = new ConcurrentLinkedDeque<>();
        Map<Integer, String> fds = OpenFds.snapshot();
        t.start();
        try (EventFd template = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                try (VhostUserFrontend fe = TestServer.connectWithRetry(path)) {
                    assertEquals(FEATURES, fe.getFeatures()); // the server is up, and back in accept after this
                }
                OpenFds.assertBackTo(fds, 2); // the listening socket and the template: the connection released
                while (!inAccept(t)) {
                    Thread.sleep(1);
                }
                // Loaded now: with the table full, loading a class from a directory would need a descriptor.
                assertTrue(new LinuxException("preload", Errno.EMFILE).getMessage().contains("EMFILE"));
                UnixSocket client;
                try {
                    while (true) {
                        fillers.add(template.fileDescriptor().duplicate());
                    }
                } catch (LinuxException e) {
                    assertEquals(Errno.EMFILE, e.errno(), e.getMessage());
                    fillers.pollLast().close(); // one for the client's socket, none for the server's accept
                    client = UnixSocket.connect(path);
                }
                try {
                    acceptFailed.await();
                } finally {
                    closeAll(fillers);
                }
                if (dropped.get()) {
                    client.close(); // the listener closed its end: connect again
                }
                try (VhostUserFrontend fe = dropped.get() ? TestServer.connectWithRetry(path) : VhostUserFrontend.over(client)) {
                    assertEquals(FEATURES, fe.getFeatures(), "the front-end is served once descriptors are free");
                }
            });
        } finally {
            closeAll(fillers);
            log.removeHandler(seen);
            server.close();
            t.join(20_000);
        }
        assertFalse(t.isAlive(), "listen() still running 20 s after close()");
        assertNull(failure.get(), "listen() ended: " + failure.get());
    }

    private static VhostUserBackendEndpoint fakeDeviceServer() {
        return new VhostUserBackendEndpoint(() -> new VhostUserSession(new FakeDevice(2), BackendOptions.defaults()));
    }

    @FunctionalInterface
    private interface Listen {
        void run() throws Exception;
    }

    /** A thread, not started, that serves through {@code listen} and keeps what it throws in {@code failure}. */
    private static Thread serving(Listen listen, AtomicReference<Throwable> failure) {
        return new Thread(() -> {
            try {
                listen.run();
            } catch (Throwable e) {
                failure.set(e);
            }
        });
    }

    /** Two front-ends one after the other, each served: after the first the server is back in accept(). */
    private static void servesTwoInTurn(Path path) {
        for (int i = 0; i < 2; i++) {
            try (VhostUserFrontend fe = TestServer.connectWithRetry(path)) {
                assertEquals(FEATURES, fe.getFeatures());
            }
        }
    }

    private static void closeAll(Deque<FileDescriptor> fds) {
        FileDescriptor f;
        while ((f = fds.pollFirst()) != null) {
            f.close();
        }
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
