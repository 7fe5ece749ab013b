package io.virtio4j.vhost.backend;

import io.virtio4j.os.Errno;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Poll;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.os.UnixSocket;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The back-end's end of the vhost-user socket, whichever side opens it: {@link #listen} on a path and serve one
 * front-end at a time, refusing (closing) any other that connects meanwhile and accepting the next once the one
 * served goes; or {@link #connect} to a front-end's socket and
 * reconnect with back-off when the front-end goes away. Each connection gets a fresh {@link VhostUserSession}.
 */
public final class VhostUserBackendEndpoint implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(VhostUserBackendEndpoint.class.getName());
    private static final long MAX_BACKOFF_MILLIS = 2000;
    /** The first wait after a transient accept failure; doubled up to {@link #MAX_BACKOFF_MILLIS}. */
    private static final long FIRST_BACKOFF_MILLIS = 10;

    private final Supplier<VhostUserSession> sessions;
    private volatile boolean closed;
    private volatile UnixServerSocket listener;
    /** The socket file {@link #listener} listens at, removed by {@link #close()} itself (see there); null when inherited. */
    private Path listening;

    public VhostUserBackendEndpoint(Supplier<VhostUserSession> sessions) {
        this.sessions = sessions;
    }

    /** Listens on {@code path} (replacing a stale socket file) and serves connections until closed. */
    public void listen(Path path) throws IOException {
        Files.deleteIfExists(path);
        listen(UnixServerSocket.listen(path, 1), path);
    }

    /**
     * Serves connections on {@code inherited}, a socket the parent process made and set listening (the back-end
     * program convention's {@code --fd}), until closed, as {@link #listen(Path)} does on a socket of its own. The
     * listener is closed at the end; its socket file, made by the parent, is the parent's to remove.
     */
    public void listen(UnixServerSocket inherited) throws IOException {
        listen(inherited, null);
    }

    /** Serves connections on {@code l}; {@code owned}: the socket file this endpoint made and removes, or null. */
    private void listen(UnixServerSocket l, Path owned) throws IOException {
        String path = l.address(); // for messages: the socket file's path, or an abstract name
        synchronized (this) {
            listener = l;
            listening = owned;
        }
        LOG.info("vhost-user back-end listening on " + path);
        Thread serving = null;
        Served served = null;
        long connections = 0;
        long backoff = FIRST_BACKOFF_MILLIS;
        try {
            while (!closed) {
                UnixSocket s;
                try {
                    s = l.accept();
                } catch (LinuxException e) {
                    if (closed) {
                        return;
                    }
                    if (!isTransient(e)) {
                        throw e;
                    }
                    // Out of descriptors (a front-end holding hundreds of region fds is enough against a 1024 limit),
                    // or a client that gave up: the listener is fine, so this is no reason to stop listening for good.
                    // The connection, if any, stays queued; try again after a pause, not in a busy loop.
                    LOG.warning(path + ": accept failed (" + e.getMessage() + "); trying again in " + backoff + " ms");
                    backoff = pause(backoff);
                    continue;
                }
                connections++;
                String peer = path + " #" + connections;
                if (serving != null && serving.isAlive() && !served.hungUp()) {
                    // One front-end owns the device: a second is told at once (end of stream) instead of waiting
                    // unanswered in the accept backlog for as long as the first stays.
                    LOG.warning(peer + ": refused: a front-end is connected already (" + serving.getName()
                            + "); closing the new connection");
                    s.close();
                    continue;
                }
                if (serving != null) {
                    // The served front-end has gone (a reconnect comes right after the close): its connection is
                    // still releasing the device, which the new one gets once that is done.
                    joinUninterruptibly(serving);
                    serving = null;
                }
                LOG.info(peer + ": front-end connected");
                VhostUserSession session = sessionFor(s);
                FileDescriptor watch;
                try {
                    watch = s.fileDescriptor().duplicate();
                } catch (LinuxException e) {
                    // Out of descriptors, as above: this front-end is dropped (it sees end of stream and may come
                    // again), the listener goes on.
                    s.close();
                    session.close();
                    LOG.warning(peer + ": dropped, no descriptor to watch it with (" + e.getMessage()
                            + "); accepting again in " + backoff + " ms");
                    backoff = pause(backoff);
                    continue;
                }
                served = new Served(watch);
                serving = serve(s, session, served, peer);
                backoff = FIRST_BACKOFF_MILLIS;
            }
        } finally {
            if (serving != null) {
                joinUninterruptibly(serving); // a connection being served is finished first (see close())
            }
            // Only this thread closes the listener, and under the lock close() shuts it down with: the number
            // cannot be closed (and reused by another open) between close() reading it and shutting it down.
            synchronized (this) {
                listener = null;
                listening = null;
                l.close();
            }
            if (owned != null) {
                Files.deleteIfExists(owned);
            }
        }
    }

    /** Connects to a front-end listening on {@code path}, and again with back-off whenever it goes away. */
    public void connect(Path path) throws InterruptedException {
        long backoff = 50;
        while (!closed) {
            UnixSocket s;
            try {
                s = UnixSocket.connect(path);
            } catch (LinuxException e) {
                LOG.fine("connect " + path + ": " + e.getMessage() + "; retrying in " + backoff + " ms");
                Thread.sleep(backoff);
                backoff = Math.min(MAX_BACKOFF_MILLIS, backoff * 2);
                continue;
            }
            backoff = 50;
            LOG.info("connected to front-end at " + path);
            new VhostUserConnection(s, sessionFor(s), path.toString()).serve();
        }
    }

    /**
     * Stops serving: a {@link #listen} blocked in accept returns (the listener is shut down; closing its descriptor
     * alone would not wake it), a connection being served is finished first. {@link #connect} stops after its
     * current connection. The socket file is removed before this returns: a process stopped by a signal runs this
     * from its shutdown hook and may halt before the listening thread gets to its own clean-up, which left the file
     * behind for the next back-end or front-end to trip over.
     */
    @Override
    public void close() {
        closed = true;
        synchronized (this) {
            if (listener != null) {
                listener.shutdown();
                if (listening == null) {
                    return; // an inherited listener: its socket file is the parent's
                }
                try {
                    Files.deleteIfExists(listening);
                } catch (IOException e) {
                    LOG.warning("could not remove the socket file " + listening + ": " + e.getMessage());
                }
            }
        }
    }

    /**
     * Serves the connection on {@code s} on a thread of its own, so that the listening thread can go on accepting
     * (and refusing) while it runs. The session is made on the listening thread, so that a device refusing one
     * still ends {@link #listen} with its exception.
     */
    private static Thread serve(UnixSocket s, VhostUserSession session, Served served, String peer) {
        try {
            Thread t = serving(s, session, served, peer);
            t.start();
            return t;
        } catch (RuntimeException | Error e) {
            // No thread (OutOfMemoryError: unable to create native thread): nothing will release what was made
            // for it, so it goes here, and listen() ends with the error.
            s.close();
            served.close();
            try {
                session.close();
            } catch (RuntimeException | Error f) {
                e.addSuppressed(f);
            }
            throw e;
        }
    }

    private static Thread serving(UnixSocket s, VhostUserSession session, Served served, String peer) {
        return new Thread(() -> {
            try {
                new VhostUserConnection(s, session, peer).serve();
            } catch (RuntimeException e) {
                // Releasing the session failed (a device that could not stop a ring): this connection is over,
                // the listening thread goes on with the next front-end.
                LOG.severe(peer + ": releasing the connection: " + e);
            } finally {
                served.close();
            }
        }, "vhost-user " + peer);
    }

    /**
     * Whether an accept failure leaves the listener usable: out of descriptors (per process or system-wide) or of
     * buffer memory, a connection aborted before it was taken, an interrupted call.
     */
    private static boolean isTransient(LinuxException e) {
        int errno = e.errno();
        return errno == Errno.EMFILE || errno == Errno.ENFILE || errno == Errno.ENOBUFS || errno == Errno.ENOMEM
                || errno == Errno.ECONNABORTED || errno == Errno.EINTR;
    }

    /** Waits {@code millis} (less if interrupted or closed meanwhile: the loop looks again); returns the next wait. */
    private static long pause(long millis) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
        return Math.min(MAX_BACKOFF_MILLIS, millis * 2);
    }

    /**
     * The served connection's socket as the listening thread sees it: a duplicate, to tell whether its front-end
     * has gone, closed by the serving thread when the connection ends (under the lock, so that the listening thread
     * never polls a number that was closed and perhaps handed to someone else).
     */
    private static final class Served {
        private FileDescriptor socket;

        Served(FileDescriptor socket) {
            this.socket = socket;
        }

        /** Whether the front-end closed its end (POLLHUP), or the connection has ended. */
        synchronized boolean hungUp() {
            return socket == null || (new Poll(socket, Poll.POLLIN).await(0) & Poll.POLLHUP) != 0;
        }

        synchronized void close() {
            if (socket != null) {
                socket.close();
                socket = null;
            }
        }
    }

    private static void joinUninterruptibly(Thread t) {
        boolean interrupted = false;
        while (true) {
            try {
                t.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** A new session for the connection on {@code s}; {@code s} is closed when there is none (a device refused). */
    private VhostUserSession sessionFor(UnixSocket s) {
        try {
            return sessions.get();
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
    }
}
