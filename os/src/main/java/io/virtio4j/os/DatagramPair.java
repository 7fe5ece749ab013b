package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Two connected, non-blocking Unix datagram sockets (socketpair AF_UNIX, SOCK_DGRAM): a frame written on one end
 * is read whole on the other. Unlike a tap, the writer is pushed back: once the reader's queue holds
 * /proc/sys/net/unix/max_dgram_qlen frames (10 by default) a write fails with EAGAIN, and EPOLLOUT follows when
 * the reader takes one. So it stands in for a tap where a test needs that back-pressure.
 */
public final class DatagramPair implements AutoCloseable {
    private static final int AF_UNIX = 1;
    private static final int SOCK_DGRAM = 2;
    private static final int SOCK_NONBLOCK = 0x800;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final MethodHandle SOCKETPAIR = Native.downcallErrno("socketpair", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);

    /** One end of the pair. */
    public static final class End implements FramePort {
        private final FileDescriptor fd;
        private final String name;
        private final FrameIo io;

        private End(FileDescriptor fd, String name) {
            this.fd = fd;
            this.name = name;
            this.io = new FrameIo(fd, name);
        }

        @Override
        public FileDescriptor fileDescriptor() {
            return fd;
        }

        @Override
        public long read(MemorySegment buffer, long capacity) {
            return io.read(buffer, capacity);
        }

        @Override
        public long write(MemorySegment frame, long length) {
            return io.write(frame, length);
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public void close() {
            fd.close();
        }

        @Override
        public String toString() {
            return name + " (" + fd + ")";
        }
    }

    private final End first;
    private final End second;

    private DatagramPair(End first, End second) {
        this.first = first;
        this.second = second;
    }

    public static DatagramPair create() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sv = arena.allocate(JAVA_INT, 2);
            Native.call("socketpair(AF_UNIX, SOCK_DGRAM)", st -> (int) SOCKETPAIR.invokeExact(st, AF_UNIX,
                    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
            FileDescriptor a = FileDescriptor.adopt(sv.getAtIndex(JAVA_INT, 0));
            FileDescriptor b = FileDescriptor.adopt(sv.getAtIndex(JAVA_INT, 1));
            return new DatagramPair(new End(a, "dgram-pair.0"), new End(b, "dgram-pair.1"));
        }
    }

    public End first() {
        return first;
    }

    public End second() {
        return second;
    }

    @Override
    public void close() {
        try (End a = first; End b = second) {
            // both closed, the second even when the first throws
        }
    }
}
