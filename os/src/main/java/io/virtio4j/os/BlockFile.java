package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A regular file or block device opened for block I/O at explicit offsets (never a file position): the backing
 * store of a virtio-blk device, shared by every queue thread. The calls that move data go through an {@link Io}, one
 * per thread (it holds the arguments of the call in progress, so that a call allocates nothing), and report a
 * failure as a negative errno rather than an exception: an I/O error is a status byte for the guest, not a crash.
 */
public final class BlockFile implements AutoCloseable {
    /** fallocate: deallocate the range (it then reads back as zeros); needs {@link #FALLOC_FL_KEEP_SIZE}. */
    public static final int FALLOC_FL_PUNCH_HOLE = 0x02;
    /** fallocate: do not change the file size. */
    public static final int FALLOC_FL_KEEP_SIZE = 0x01;
    /** fallocate: make the range read back as zeros, keeping it allocated. */
    public static final int FALLOC_FL_ZERO_RANGE = 0x10;
    /** The mode of a discard (and of a write-zeroes that may unmap): a hole, the size kept. */
    public static final int DISCARD_MODE = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    /**
     * The mode of a write-zeroes: zeros kept allocated, the size kept (a block device takes ZERO_RANGE only with
     * KEEP_SIZE on older kernels; a file's range is inside it anyway).
     */
    public static final int ZERO_MODE = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;

    private static final int O_RDONLY = 0;
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int SEEK_END = 2;
    /** _IO(0x12, 104): a block device's logical sector size, an int. */
    private static final long BLKSSZGET = 0x1268;
    private static final MethodHandle OPEN = Native.downcallErrno("open", Linker.Option.firstVariadicArg(2),
            JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
    private static final MethodHandle LSEEK = Native.downcallErrno("lseek", JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT);
    // The iovec pointer is passed as a 64-bit integer (the same register on LP64 x86-64 and aarch64): an address in
    // the middle of the array would otherwise need a slice, an object per call.
    private static final MethodHandle PREADV = Native.downcallErrno("preadv", JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT,
            JAVA_LONG);
    private static final MethodHandle PWRITEV = Native.downcallErrno("pwritev", JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT,
            JAVA_LONG);
    private static final MethodHandle FDATASYNC = Native.downcallErrno("fdatasync", JAVA_INT, JAVA_INT);
    private static final MethodHandle FALLOCATE = Native.downcallErrno("fallocate", JAVA_INT, JAVA_INT, JAVA_INT,
            JAVA_LONG, JAVA_LONG);
    // The same calls without errno capture (Native.callUncaptured says why): each call is made uncaptured first
    // and again captured only when it failed, to learn why. A failed call moved nothing (a vectored call that moved
    // some bytes reports them instead of failing), so making it again is harmless. Not fdatasync: the kernel reports
    // a write-back error once per open file, so a second call after a failed one returns 0 and the loss would pass
    // for success (it is always made captured, below).
    private static final MethodHandle PREADV_UNCAPTURED = Native.downcall("preadv", JAVA_LONG, JAVA_INT, JAVA_LONG,
            JAVA_INT, JAVA_LONG);
    private static final MethodHandle PWRITEV_UNCAPTURED = Native.downcall("pwritev", JAVA_LONG, JAVA_INT, JAVA_LONG,
            JAVA_INT, JAVA_LONG);
    private static final MethodHandle FALLOCATE_UNCAPTURED = Native.downcall("fallocate", JAVA_INT, JAVA_INT, JAVA_INT,
            JAVA_LONG, JAVA_LONG);

    private final FileDescriptor fd;
    private final String path;
    private final boolean readOnly;

    private BlockFile(FileDescriptor fd, String path, boolean readOnly) {
        this.fd = fd;
        this.path = path;
        this.readOnly = readOnly;
    }

    /**
     * Opens {@code path} read-write, or read-only, close-on-exec (an existing file or block device: nothing is
     * created).
     *
     * @throws LinuxException when it cannot be opened (ENOENT, EACCES, EROFS ...)
     */
    public static BlockFile open(String path, boolean readOnly) {
        int flags = (readOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cPath = arena.allocateFrom(path);
            int n = (int) Native.call("open(" + path + ")", st -> (int) OPEN.invokeExact(st, cPath, flags, 0));
            return new BlockFile(FileDescriptor.adopt(n), path, readOnly);
        }
    }

    public String path() {
        return path;
    }

    public boolean readOnly() {
        return readOnly;
    }

    public FileDescriptor fileDescriptor() {
        return fd;
    }

    /**
     * Size in bytes: lseek to the end, which unlike fstat's st_size also tells a block device's size (the
     * descriptor's position is never used for I/O here, so moving it is harmless).
     */
    public long size() {
        int n = fd.fd();
        return Native.call("lseek(" + path + ", SEEK_END)", st -> (long) LSEEK.invokeExact(st, n, 0L, SEEK_END));
    }

    /**
     * The logical block size of a block device (ioctl BLKSSZGET): the smallest unit it reads, writes, discards and
     * zeroes; 0 for a regular file (ENOTTY: a file takes any byte range).
     */
    public int logicalBlockSize() {
        int n = fd.fd();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment size = arena.allocate(JAVA_INT);
            long r = Native.call("ioctl BLKSSZGET(" + path + ")",
                    st -> (int) Native.IOCTL.invokeExact(st, n, BLKSSZGET, size), Errno.ENOTTY);
            return r < 0 ? 0 : size.get(JAVA_INT, 0);
        }
    }

    /** Flushes the file's data to stable storage (fdatasync), throwing on failure: for callers outside the I/O path. */
    public void sync() {
        int n = fd.fd();
        Native.call("fdatasync(" + path + ")", st -> (int) FDATASYNC.invokeExact(st, n));
    }

    /** A handle for one thread's I/O on this file. */
    public Io io() {
        return new Io();
    }

    @Override
    public void close() {
        fd.close();
    }

    @Override
    public String toString() {
        return path + (readOnly ? " (read-only)" : "");
    }

    /**
     * One thread's I/O calls on the file: each returns a byte count (or 0) or a negative errno, retries EINTR, and
     * allocates nothing. Not thread-safe: it holds the arguments of the call in progress.
     */
    public final class Io {
        private long iovAddress;
        private int iovCount;
        private long offset;
        private long length;
        private int mode;
        /** The rest of an entry a short transfer stopped inside (GC-managed: it lives as long as this handle). */
        private final IoVecs rest = IoVecs.allocate(Arena.ofAuto(), 1);
        private final IoVecs.Cursor cursor = new IoVecs.Cursor();
        private final Native.Call preadv;
        private final Native.Call pwritev;
        private final Native.Call fdatasync;
        private final Native.Call fallocate;
        private final Native.Call preadvUncaptured;
        private final Native.Call pwritevUncaptured;
        private final Native.Call fallocateUncaptured;
        // Built once: a call's name is only used in the message of an unexpected Java-level failure.
        private final String readName = "preadv(" + path + ")";
        private final String writeName = "pwritev(" + path + ")";
        private final String syncName = "fdatasync(" + path + ")";
        private final String fallocateName = "fallocate(" + path + ")";

        private Io() {
            int n = fd.fd();
            preadv = st -> (long) PREADV.invokeExact(st, n, iovAddress, iovCount, offset);
            pwritev = st -> (long) PWRITEV.invokeExact(st, n, iovAddress, iovCount, offset);
            fdatasync = st -> (long) (int) FDATASYNC.invokeExact(st, n);
            fallocate = st -> (long) (int) FALLOCATE.invokeExact(st, n, mode, offset, length);
            preadvUncaptured = st -> (long) PREADV_UNCAPTURED.invokeExact(n, iovAddress, iovCount, offset);
            pwritevUncaptured = st -> (long) PWRITEV_UNCAPTURED.invokeExact(n, iovAddress, iovCount, offset);
            fallocateUncaptured = st -> (long) (int) FALLOCATE_UNCAPTURED.invokeExact(n, mode, offset, length);
        }

        /** Makes the call uncaptured; only when it failed, again with errno captured (see PREADV_UNCAPTURED). */
        private long call(String name, Native.Call uncaptured, Native.Call captured) {
            long r = Native.callUncaptured(name, uncaptured);
            return r >= 0 ? r : Native.callOrErrno(name, captured);
        }

        /**
         * Reads {@code length} bytes at {@code at} into entries {@code from} to {@code from + count - 1} of
         * {@code iov}, whose lengths add up to {@code length}, looping on short reads. The caller's entries are only
         * read, never rewritten (iovecs built once may be shared): a short read goes on from the next whole entry,
         * or, when it stopped inside one, first with that entry's rest alone through an entry of this handle's own
         * (as the io_uring engine continues).
         *
         * @return {@code length}, or a negative errno; -EIO when the file ends before {@code at + length} (it shrank
         *         under us)
         */
        public long preadv(IoVecs iov, int from, int count, long at, long length) {
            return transfer(preadvUncaptured, preadv, readName, iov, from, count, at, length);
        }

        /** Writes like {@link #preadv} reads; -EIO when the kernel writes nothing (ENOSPC shows as its errno). */
        public long pwritev(IoVecs iov, int from, int count, long at, long length) {
            if (readOnly) {
                return -Errno.EBADF; // what the kernel would answer: the descriptor is not open for writing
            }
            return transfer(pwritevUncaptured, pwritev, writeName, iov, from, count, at, length);
        }

        private long transfer(Native.Call uncaptured, Native.Call captured, String name, IoVecs iov, int from, int count, long at, long total) {
            if (count < 0 || from < 0 || count > iov.capacity() - from || at < 0 || total < 0) {
                throw new IndexOutOfBoundsException("iovecs " + from + "+" + count + " of " + iov.capacity()
                        + " at offset " + at + ", " + total + " bytes");
            }
            if (iov.totalLength(from, count) != total) {
                return -Errno.EINVAL; // the lengths do not add up to total: the caller's bug, and nothing is moved
            }
            cursor.start(iov, from, count);
            long done = 0;
            try {
                while (done < total) {
                    IoVecs v = cursor.array(rest);
                    iovAddress = v.entryAddress(cursor.index());
                    iovCount = cursor.count(); // at most IoVecs.MAX_ENTRIES: no array holds more
                    offset = at + done;
                    long n = call(name, uncaptured, captured);
                    if (n < 0) {
                        return n;
                    }
                    if (n == 0 || !cursor.advance(n)) {
                        return -Errno.EIO; // no progress (the end of the file), or more than asked: never done short
                    }
                    done += n;
                }
                return done;
            } finally {
                cursor.clear();
            }
        }

        /**
         * fdatasync; 0 or a negative errno. Made once, errno captured: the kernel reports a write-back error (EIO,
         * ENOSPC) to the first fdatasync after it only, so the failed call is the only one that can tell.
         */
        public long fdatasync() {
            return Native.callOrErrno(syncName, fdatasync);
        }

        /**
         * fallocate({@code mode}, {@code at}, {@code length}): {@link #FALLOC_FL_PUNCH_HOLE} |
         * {@link #FALLOC_FL_KEEP_SIZE} to discard, {@link #FALLOC_FL_ZERO_RANGE} to zero; 0 or a negative errno
         * (-EOPNOTSUPP when the file system or device has no such operation).
         */
        public long fallocate(int mode, long at, long length) {
            if (readOnly) {
                return -Errno.EBADF;
            }
            this.mode = mode;
            this.offset = at;
            this.length = length;
            return call(fallocateName, fallocateUncaptured, fallocate);
        }
    }
}
