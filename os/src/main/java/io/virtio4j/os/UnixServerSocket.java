package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A listening AF_UNIX stream socket at a filesystem path. Closing it does not remove the socket file: that,
 * and removing a stale one before {@link #listen}, is the caller's choice.
 */
public final class UnixServerSocket implements AutoCloseable {
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final MethodHandle BIND = Native.downcallErrno("bind", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle LISTEN = Native.downcallErrno("listen", JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle ACCEPT4 = Native.downcallErrno("accept4", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT);
    private static final MethodHandle SHUTDOWN = Native.downcallErrno("shutdown", JAVA_INT, JAVA_INT, JAVA_INT);
    private static final int SHUT_RDWR = 2;

    private final FileDescriptor fd;
    private final Path path;

    private UnixServerSocket(FileDescriptor fd, Path path) {
        this.fd = fd;
        this.path = path;
    }

    /**
     * Creates a socket, binds it to {@code path} and listens.
     *
     * @param backlog how many connections may wait for {@link #accept}
     * @throws LinuxException EADDRINUSE when a file exists at the path
     * @throws IllegalArgumentException when the path is longer than 107 bytes
     */
    public static UnixServerSocket listen(Path path, int backlog) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = UnixAddress.of(path, arena);
            FileDescriptor fd = UnixSocket.newStreamSocket();
            try {
                int n = fd.fd();
                Native.call("bind(" + path + ")", st -> (int) BIND.invokeExact(st, n, address, (int) UnixAddress.size()));
                Native.call("listen(" + path + ")", st -> (int) LISTEN.invokeExact(st, n, backlog));
                return new UnixServerSocket(fd, path);
            } catch (RuntimeException e) {
                fd.close();
                throw e;
            }
        }
    }

    /** Waits for a connection and returns it, close-on-exec. */
    public UnixSocket accept() {
        int n = fd.fd();
        int client = (int) Native.call("accept4(" + path + ")",
                st -> (int) ACCEPT4.invokeExact(st, n, MemorySegment.NULL, MemorySegment.NULL, SOCK_CLOEXEC));
        return new UnixSocket(FileDescriptor.adopt(client));
    }

    /**
     * Stops accepting: a thread blocked in {@link #accept} returns with EINVAL, and later calls fail the same
     * way. Closing the descriptor does not do this: on Linux a thread blocked in accept keeps waiting (and would
     * still get the next connection). The descriptor stays open; close it once no thread is in accept.
     */
    public void shutdown() {
        int n = fd.fd();
        Native.call("shutdown(" + path + ")", st -> (int) SHUTDOWN.invokeExact(st, n, SHUT_RDWR));
    }

    public Path path() {
        return path;
    }

    public FileDescriptor fileDescriptor() {
        return fd;
    }

    @Override
    public void close() {
        fd.close();
    }

    @Override
    public String toString() {
        return "unix server socket(" + fd + ", " + path + ")";
    }
}
