package io.virtio4j.vhost.backend;

import io.virtio4j.os.UnixSocket;
import io.virtio4j.vhost.frontend.VhostUserFrontend;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A device served over one end of a socket pair by a connection thread of this JVM; the other end is a
 * {@link VhostUserFrontend} for a driver in the same JVM (a back-end embedded in its user's process, tests,
 * experiments). No socket file, no listener: the connection ends when the front-end closes, and then the session
 * stops the device's queues (reset).
 */
public final class InProcessBackend {
    private static final long JOIN_MILLIS = 20_000;

    private final Thread thread;
    private final AtomicReference<VhostUserConnection.End> end = new AtomicReference<>();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    private InProcessBackend(VirtioDevice device, UnixSocket backendEnd, String name) {
        this.thread = new Thread(() -> {
            VhostUserConnection connection;
            try {
                connection = new VhostUserConnection(backendEnd, new VhostUserSession(device, BackendOptions.defaults()),
                        name);
            } catch (Throwable t) {
                // Refused before serving (e.g. a device declaring protocol features it may not): the front-end is
                // waiting for its first answer. Closing our end gives it EOF or EPIPE, an error, instead of a wait
                // for ever; serve() would have closed it, but serve() never runs.
                backendEnd.close();
                failure.set(t);
                return;
            }
            try {
                end.set(connection.serve());
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "vhost-user-" + name);
        this.thread.setDaemon(true);
    }

    /** Starts serving {@code device}; returns the front-end connected to it. */
    public static Connected start(VirtioDevice device, String name) {
        UnixSocket[] pair = UnixSocket.pair();
        InProcessBackend b = new InProcessBackend(device, pair[1], name);
        b.thread.start();
        return new Connected(b, VhostUserFrontend.over(pair[0]));
    }

    /** A started back-end and the front-end connected to it. */
    public record Connected(InProcessBackend backend, VhostUserFrontend frontend) {
    }

    /**
     * Waits (bounded) for the connection to end, which it does once the front-end is closed.
     *
     * @throws IllegalStateException when it did not end, or the connection thread failed
     */
    public VhostUserConnection.End awaitEnd() throws InterruptedException {
        thread.join(JOIN_MILLIS);
        if (thread.isAlive()) {
            throw new IllegalStateException("vhost-user connection did not end within " + JOIN_MILLIS + " ms");
        }
        if (failure.get() != null) {
            throw new IllegalStateException("vhost-user connection thread failed", failure.get());
        }
        return end.get();
    }
}
