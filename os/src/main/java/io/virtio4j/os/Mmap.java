package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** Shared file mappings (mmap MAP_SHARED) whose lifetime is an {@link Arena}: closing the arena unmaps. */
public final class Mmap {
    private Mmap() {
    }

    private static final int PROT_READ = 0x1;
    private static final int PROT_WRITE = 0x2;
    private static final int MAP_SHARED = 0x01;
    /** Reserves no swap and, on hugetlbfs, no huge pages for the mapping (see {@link #mapSharedNoReserve}). */
    private static final int MAP_NORESERVE = 0x4000;

    // mmap's result is declared as a long, not an address, so that MAP_FAILED ((void *) -1) is an ordinary
    // negative result for Native.call; a user-space address is always positive on x86-64 and aarch64.
    private static final MethodHandle MMAP =
            Native.downcallErrno("mmap", JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG);
    private static final MethodHandle MUNMAP = Native.downcallErrno("munmap", JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle GETPAGESIZE = Native.downcall("getpagesize", JAVA_INT);
    private static final long PAGE_SIZE = pageSizeOf();

    public static long pageSize() {
        return PAGE_SIZE;
    }

    /** Maps the first {@code length} bytes of {@code fd} read-write and shared. */
    public static MemorySegment mapShared(FileDescriptor fd, long length, Arena arena) {
        return mapShared(fd, 0, length, arena);
    }

    /**
     * Maps {@code length} bytes of {@code fd} from {@code offset}, read-write and shared, until {@code arena} closes.
     * The offset need not be aligned (vhost-user's mmap_offset is not): the mapping starts at the offset rounded
     * down to the file's page size ({@link #filePageSize}: on hugetlbfs the huge page size, which mmap requires
     * there) and ends at the range's end rounded up to it; the returned segment is the exact range. Huge pages are
     * reserved at mmap, so an empty pool fails here (ENOMEM) rather than at the first touch.
     *
     * <p>The file must cover the range: touching a page past its end raises SIGBUS, which the JVM turns into an
     * {@link InternalError} (see docs/architecture.md, guest memory faults).
     *
     * @throws LinuxException when fstat or mmap fails
     */
    public static MemorySegment mapShared(FileDescriptor fd, long offset, long length, Arena arena) {
        return map(fd, offset, length, MAP_SHARED, arena);
    }

    /**
     * {@link #mapShared(FileDescriptor, long, long, Arena)} with MAP_NORESERVE, for memory another process owns and
     * sized (a vhost-user front-end's guest RAM): the mapping reserves no swap and no huge pages a second time, so
     * it cannot fail for want of what the owner already holds (QEMU, DPDK and libvhost-user map it so too).
     */
    public static MemorySegment mapSharedNoReserve(FileDescriptor fd, long offset, long length, Arena arena) {
        return map(fd, offset, length, MAP_SHARED | MAP_NORESERVE, arena);
    }

    private static MemorySegment map(FileDescriptor fd, long offset, long length, int flags, Arena arena) {
        if (offset < 0 || length <= 0) {
            throw new IllegalArgumentException("bad range: offset " + offset + ", length " + length);
        }
        long page = filePageSize(fd);
        long lead = offset & (page - 1);
        long fileOffset = offset - lead;
        long end = Math.addExact(lead, length);
        long mapLength = Math.addExact(end, page - 1) & -page;
        int n = fd.fd();
        long address = Native.call("mmap(" + fd + ", offset " + offset + ", length " + length + ")",
                st -> (long) MMAP.invokeExact(st, MemorySegment.NULL, mapLength, PROT_READ | PROT_WRITE, flags, n,
                        fileOffset));
        MemorySegment mapping;
        try {
            mapping = MemorySegment.ofAddress(address).reinterpret(mapLength, arena, s -> unmap(s, mapLength));
        } catch (RuntimeException e) { // the arena is closed or owned by another thread: nothing will unmap
            unmap(MemorySegment.ofAddress(address), mapLength);
            throw e;
        }
        return mapping.asSlice(lead, length);
    }

    /**
     * The page size mappings of {@code fd} are made of: its st_blksize when that is a power-of-two multiple of the
     * system page (hugetlbfs reports its huge page size there, as DPDK relies on too), else the system page size
     * (a file system whose preferred I/O size is not a page multiple says nothing about its mappings).
     *
     * @throws LinuxException when fstat fails
     */
    public static long filePageSize(FileDescriptor fd) {
        long blk = fd.blockSize();
        return blk > PAGE_SIZE && Long.bitCount(blk) == 1 ? blk : PAGE_SIZE;
    }

    private static void unmap(MemorySegment start, long length) {
        Native.call("munmap(0x" + Long.toHexString(start.address()) + ", " + length + ")", st -> (int) MUNMAP.invokeExact(st, start, length));
    }

    private static long pageSizeOf() {
        try {
            return (int) GETPAGESIZE.invokeExact();
        } catch (Throwable t) {
            throw new ExceptionInInitializerError(t);
        }
    }
}
