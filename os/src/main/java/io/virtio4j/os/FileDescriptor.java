package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * An owned Linux file descriptor: closed exactly once, by {@link #close()}, unless {@link #release() released}.
 *
 * <p>Closing while another thread still uses the number is the caller's race to avoid, as with any fd: the
 * kernel may hand the same number to the next open.
 */
public final class FileDescriptor implements AutoCloseable {
    private static final int CLOSED = -1;
    private static final MethodHandle CLOSE = Native.downcallErrno("close", JAVA_INT, JAVA_INT);
    private static final MethodHandle FSTAT = Native.downcallErrno("fstat", JAVA_INT, JAVA_INT, ADDRESS);
    /** fcntl(int, int, ...) with one int argument: variadic from the third. */
    private static final MethodHandle FCNTL_INT = Native.downcallErrno("fcntl", Linker.Option.firstVariadicArg(2),
            JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle DUP3 = Native.downcallErrno("dup3", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    private static final int F_DUPFD_CLOEXEC = 1030;
    private static final int O_CLOEXEC = 0x80000;
    static final int O_NONBLOCK = 0x800;
    // struct stat on x86-64 and aarch64 glibc: 144 / 128 bytes; st_size is at 48 on both, st_blksize at 56 on both
    // (a long on x86-64, an int followed by padding on aarch64: read as an int, little-endian, it is the same)
    private static final long STAT_BYTES = 144;
    private static final long ST_SIZE = 48;
    private static final long ST_BLKSIZE = 56;

    private final AtomicInteger fd;
    /** The number this object owned, kept for messages after close. */
    private final int number;

    private FileDescriptor(int fd) {
        this.fd = new AtomicInteger(fd);
        this.number = fd;
    }

    /** Takes ownership of {@code fd}: the returned object closes it. */
    public static FileDescriptor adopt(int fd) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd);
        }
        return new FileDescriptor(fd);
    }

    /**
     * The descriptor number.
     *
     * @throws FileDescriptorClosedException after {@link #close()} or {@link #release()}
     */
    public int fd() {
        int v = fd.get();
        if (v == CLOSED) {
            throw new FileDescriptorClosedException(number);
        }
        return v;
    }

    public boolean isOpen() {
        return fd.get() != CLOSED;
    }

    /**
     * Hands the raw number over to the caller, who must close it; this object no longer owns it.
     *
     * @throws FileDescriptorClosedException when already closed or released
     */
    public int release() {
        int v = fd.getAndSet(CLOSED);
        if (v == CLOSED) {
            throw new FileDescriptorClosedException(number);
        }
        return v;
    }

    /**
     * Size in bytes of what the descriptor refers to (fstat's st_size): for a memfd or a hugetlbfs file, how far
     * it may be mapped without a SIGBUS on access.
     */
    public long size() {
        return fstat(ST_SIZE, false);
    }

    /**
     * The preferred I/O block size of what the descriptor refers to (fstat's st_blksize). On hugetlbfs, a hugetlb
     * memfd included, it is the huge page size (as is statfs's f_bsize there): the unit mmap offsets and lengths of
     * such a file must be aligned to.
     */
    public long blockSize() {
        return fstat(ST_BLKSIZE, true);
    }

    private long fstat(long field, boolean isInt) {
        int n = fd();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = arena.allocate(STAT_BYTES, 8);
            Native.call("fstat(" + this + ")", s -> (int) FSTAT.invokeExact(s, n, st));
            return isInt ? Integer.toUnsignedLong(st.get(ValueLayout.JAVA_INT, field)) : st.get(ValueLayout.JAVA_LONG, field);
        }
    }

    /** Switches the open file description to non-blocking mode (O_NONBLOCK); shared with every other copy of it. */
    public void makeNonBlocking() {
        int n = fd();
        int flags = (int) Native.call("fcntl(" + this + ", F_GETFL)", s -> (int) FCNTL_INT.invokeExact(s, n, F_GETFL, 0));
        if ((flags & O_NONBLOCK) == 0) {
            Native.call("fcntl(" + this + ", F_SETFL)", s -> (int) FCNTL_INT.invokeExact(s, n, F_SETFL, flags | O_NONBLOCK));
        }
    }

    /** A new descriptor (close-on-exec) for the same open file: owned by the caller, closed apart from this one. */
    public FileDescriptor duplicate() {
        int n = fd();
        return adopt((int) Native.call("fcntl(" + this + ", F_DUPFD_CLOEXEC)",
                s -> (int) FCNTL_INT.invokeExact(s, n, F_DUPFD_CLOEXEC, 0)));
    }

    /**
     * Makes {@code target}'s number refer to this descriptor's open file (dup3, close-on-exec), dropping the file it
     * referred to, in one step: a read or write another thread makes on that number meanwhile goes to the one file
     * or the other, never to a third that took over a closed number. Both descriptors stay open and owned as
     * before.
     */
    public void duplicateOnto(FileDescriptor target) {
        int from = fd();
        int to = target.fd();
        Native.call("dup3(" + this + ", " + target + ")", s -> (int) DUP3.invokeExact(s, from, to, O_CLOEXEC));
    }

    /** Closes the descriptor the first time; later calls do nothing. */
    @Override
    public void close() {
        int v = fd.getAndSet(CLOSED);
        if (v != CLOSED) {
            // Linux frees the number even when close reports EINTR; retrying could close someone else's fd.
            Native.call("close(fd " + v + ")", st -> (int) CLOSE.invokeExact(st, v), Errno.EINTR);
        }
    }

    @Override
    public String toString() {
        return isOpen() ? "fd " + number : "fd " + number + " (closed)";
    }
}
