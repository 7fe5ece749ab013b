package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A listening AF_UNIX stream socket: made here at a filesystem path ({@link #listen}), or handed down by the parent
 * process already listening ({@link #adopt}). Closing it does not remove the socket file: that, and removing a stale
 * one before {@link #listen}, is the caller's choice.
 */
public final class UnixServerSocket implements AutoCloseable {
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final MethodHandle BIND = Native.downcallErrno("bind", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle LISTEN = Native.downcallErrno("listen", JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle ACCEPT4 = Native.downcallErrno("accept4", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT);
    private static final MethodHandle SHUTDOWN = Native.downcallErrno("shutdown", JAVA_INT, JAVA_INT, JAVA_INT);
    private static final int SHUT_RDWR = 2;
    private static final MethodHandle GETSOCKOPT =
            Native.downcallErrno("getsockopt", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle GETSOCKNAME = Native.downcallErrno("getsockname", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
    private static final int SOL_SOCKET = 1;
    private static final int SO_TYPE = 3;
    private static final int SO_ACCEPTCONN = 30;
    private static final int SO_DOMAIN = 39;
    private static final int SOCK_STREAM = 1;

    private final FileDescriptor fd;
    /** The socket file, or null for a socket without one (an adopted socket with an abstract address). */
    private final Path path;
    /** The address as text, for messages: the path, or an abstract name as {@code @name}. */
    private final String address;

    private UnixServerSocket(FileDescriptor fd, Path path, String address) {
        this.fd = fd;
        this.path = path;
        this.address = address;
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
                return new UnixServerSocket(fd, path, path.toString());
            } catch (RuntimeException e) {
                fd.close();
                throw e;
            }
        }
    }

    /**
     * Takes over descriptor {@code fd}, a socket the parent process made, bound and set listening before starting
     * this one (the vhost-user back-end program convention's {@code --fd=FDNUM}; systemd socket activation works the
     * same way). The number comes from outside, so it is checked before it is taken: it must be open, a socket, of
     * family AF_UNIX, of type SOCK_STREAM and listening. A refused number is left exactly as it was, not closed: it
     * was never this object's. An accepted one is made close-on-exec, so that a program this process starts later
     * does not hold the listener open after this process has gone.
     *
     * @throws NotAListeningSocketException when {@code fd} is anything else, naming what it is
     */
    public static UnixServerSocket adopt(int fd) {
        if (fd < 0) {
            throw new NotAListeningSocketException(fd, "not a descriptor number");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_INT);
            MemorySegment length = arena.allocate(JAVA_INT);
            int domain = socketOption(fd, SO_DOMAIN, value, length);
            if (domain != UnixAddress.AF_UNIX) {
                throw new NotAListeningSocketException(fd, "a socket of address family " + domain + " (AF_UNIX is 1)");
            }
            int type = socketOption(fd, SO_TYPE, value, length);
            if (type != SOCK_STREAM) {
                throw new NotAListeningSocketException(fd, "an AF_UNIX socket of type " + typeName(type));
            }
            if (socketOption(fd, SO_ACCEPTCONN, value, length) == 0) {
                throw new NotAListeningSocketException(fd, "an AF_UNIX stream socket that is not listening");
            }
            MemorySegment name = arena.allocate(UnixAddress.size());
            length.set(JAVA_INT, 0, (int) UnixAddress.size());
            Native.call("getsockname(fd " + fd + ")", st -> (int) GETSOCKNAME.invokeExact(st, fd, name, length));
            int nameLength = Math.min(length.get(JAVA_INT, 0), (int) UnixAddress.size()); // the kernel reports the full length
            Path path = UnixAddress.pathOf(name, nameLength);
            String address = path != null ? path.toString() : UnixAddress.describe(name, nameLength);
            FileDescriptor owned = FileDescriptor.adopt(fd);
            owned.setCloseOnExec();
            return new UnixServerSocket(owned, path, address);
        }
    }

    /** An int-valued SOL_SOCKET option of {@code fd}; a number that is not an open socket is refused. */
    private static int socketOption(int fd, int option, MemorySegment value, MemorySegment length) {
        length.set(JAVA_INT, 0, (int) JAVA_INT.byteSize());
        long r = Native.callOrErrno("getsockopt(fd " + fd + ")",
                st -> (int) GETSOCKOPT.invokeExact(st, fd, SOL_SOCKET, option, value, length));
        if (r == -Errno.EBADF) {
            throw new NotAListeningSocketException(fd, "not an open descriptor (EBADF)");
        }
        if (r == -Errno.ENOTSOCK) {
            throw new NotAListeningSocketException(fd, "not a socket (ENOTSOCK)");
        }
        if (r < 0) {
            throw new LinuxException("getsockopt(fd " + fd + ", SOL_SOCKET, " + option + ")", (int) -r);
        }
        return value.get(JAVA_INT, 0);
    }

    private static String typeName(int type) {
        return switch (type) {
            case 2 -> "SOCK_DGRAM";
            case 5 -> "SOCK_SEQPACKET";
            default -> Integer.toString(type);
        };
    }

    /** Waits for a connection and returns it, close-on-exec. */
    public UnixSocket accept() {
        int n = fd.fd();
        int client = (int) Native.call("accept4(" + address + ")",
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
        Native.call("shutdown(" + address + ")", st -> (int) SHUTDOWN.invokeExact(st, n, SHUT_RDWR));
    }

    /** The socket file; null for an {@link #adopt adopted} socket with an abstract address, which has none. */
    public Path path() {
        return path;
    }

    /** The address as text: the socket file's path, or an abstract name as {@code @name}. */
    public String address() {
        return address;
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
        return "unix server socket(" + fd + ", " + address + ")";
    }
}
