package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A connected AF_UNIX stream socket that carries bytes and file descriptors (SCM_RIGHTS): the vhost-user
 * control channel. Blocking; one sender and one receiver at a time.
 */
public final class UnixSocket implements AutoCloseable {
    /** The most descriptors one {@link #sendmsg} carries and one {@link #recvmsg} accepts. */
    public static final int MAX_FDS = ScmRights.MAX_FDS;

    /** What one {@link #recvmsg} got: {@code bytes} into the buffer (0: the peer closed), {@code fds} into fdsOut. */
    public record Received(long bytes, int fds) {
    }

    private static final int SOCK_STREAM = 1;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int MSG_CTRUNC = 0x8;
    private static final int MSG_NOSIGNAL = 0x4000; // EPIPE instead of SIGPIPE when the peer has gone
    private static final int MSG_CMSG_CLOEXEC = 0x40000000;

    private static final MethodHandle SOCKET = Native.downcallErrno("socket", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle SOCKETPAIR =
            Native.downcallErrno("socketpair", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle CONNECT = Native.downcallErrno("connect", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle SENDMSG = Native.downcallErrno("sendmsg", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle RECVMSG = Native.downcallErrno("recvmsg", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT);

    private final FileDescriptor fd;

    UnixSocket(FileDescriptor fd) {
        this.fd = fd;
    }

    /** A new, unconnected, close-on-exec AF_UNIX stream socket. */
    static FileDescriptor newStreamSocket() {
        return FileDescriptor.adopt((int) Native.call("socket(AF_UNIX, SOCK_STREAM)",
                st -> (int) SOCKET.invokeExact(st, (int) UnixAddress.AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
    }

    /**
     * Connects to the socket listening at {@code path}.
     *
     * @throws LinuxException ENOENT when nothing is at the path, ECONNREFUSED when nothing listens there
     * @throws IllegalArgumentException when the path is longer than 107 bytes
     */
    public static UnixSocket connect(Path path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = UnixAddress.of(path, arena);
            FileDescriptor fd = newStreamSocket();
            try {
                int n = fd.fd();
                Native.call("connect(" + path + ")",
                        st -> (int) CONNECT.invokeExact(st, n, address, (int) UnixAddress.size()));
                return new UnixSocket(fd);
            } catch (RuntimeException e) {
                fd.close();
                throw e;
            }
        }
    }

    /** Two connected sockets (socketpair), close-on-exec. */
    public static UnixSocket[] pair() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sv = arena.allocate(JAVA_INT, 2);
            Native.call("socketpair(AF_UNIX, SOCK_STREAM)", st -> (int) SOCKETPAIR.invokeExact(st,
                    (int) UnixAddress.AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
            return new UnixSocket[] {
                    new UnixSocket(FileDescriptor.adopt(sv.getAtIndex(JAVA_INT, 0))),
                    new UnixSocket(FileDescriptor.adopt(sv.getAtIndex(JAVA_INT, 1)))};
        }
    }

    /**
     * Sends the first {@code length} bytes of {@code data}, with {@code fds} attached to the first byte. Waits
     * until all bytes are sent. The descriptors stay owned by the caller, who may close them at once: the
     * receiver gets its own.
     *
     * @param data native memory
     * @param fds at most {@link #MAX_FDS}; with any, {@code length} must be positive, since a stream socket
     *        delivers descriptors only together with data
     * @throws LinuxException EPIPE when the peer has closed
     */
    public void sendmsg(MemorySegment data, long length, FileDescriptor... fds) {
        requireNative(data, length);
        if (fds.length > MAX_FDS) {
            throw new IllegalArgumentException(fds.length + " file descriptors; one message carries at most " + MAX_FDS);
        }
        if (fds.length > 0 && length == 0) {
            throw new IllegalArgumentException("file descriptors need at least one byte of data to travel with");
        }
        int n = fd.fd();
        String name = "sendmsg(" + fd + ")";
        try (Arena arena = Arena.ofConfined()) {
            MessageHeader msg = new MessageHeader(arena);
            msg.control(ScmRights.forSending(fds, arena));
            long sent = 0;
            do {
                msg.data(data.asSlice(sent), length - sent);
                sent += Native.call(name, st -> (long) SENDMSG.invokeExact(st, n, msg.segment(), MSG_NOSIGNAL));
                msg.control(MemorySegment.NULL); // the descriptors went with the first part
            } while (sent < length);
        }
    }

    /**
     * Receives up to {@code buffer.byteSize()} bytes and the descriptors sent with them, close-on-exec. The
     * caller owns the descriptors put in {@code fdsOut[0 .. fds)}.
     *
     * @param buffer native memory
     * @param fdsOut room for the descriptors, at most {@link #MAX_FDS} of it used; empty to accept none
     * @throws ControlMessageTruncatedException when more descriptors arrived than {@code fdsOut} holds; those
     *         that arrived are closed
     */
    public Received recvmsg(MemorySegment buffer, FileDescriptor[] fdsOut) {
        requireNative(buffer, buffer.byteSize());
        int room = Math.min(fdsOut.length, MAX_FDS);
        int n = fd.fd();
        String name = "recvmsg(" + fd + ")";
        try (Arena arena = Arena.ofConfined()) {
            MessageHeader msg = new MessageHeader(arena);
            msg.data(buffer, buffer.byteSize());
            MemorySegment control = ScmRights.forReceiving(room, arena);
            msg.control(control);
            long bytes = Native.call(name, st -> (long) RECVMSG.invokeExact(st, n, msg.segment(), MSG_CMSG_CLOEXEC));
            List<FileDescriptor> fds = ScmRights.received(control, msg.controlLength());
            boolean kernelTruncated = (msg.flags() & MSG_CTRUNC) != 0;
            if (kernelTruncated || fds.size() > room) {
                fds.forEach(FileDescriptor::close);
                throw new ControlMessageTruncatedException(name, room, fds.size(), kernelTruncated);
            }
            for (int i = 0; i < fds.size(); i++) {
                fdsOut[i] = fds.get(i);
            }
            return new Received(bytes, fds.size());
        }
    }

    private static void requireNative(MemorySegment data, long length) {
        if (!data.isNative()) {
            throw new IllegalArgumentException("socket data must be in native memory, not a heap segment");
        }
        if (length < 0 || length > data.byteSize()) {
            throw new IllegalArgumentException("length " + length + " outside segment of " + data.byteSize() + " bytes");
        }
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
        return "unix socket(" + fd + ")";
    }
}
