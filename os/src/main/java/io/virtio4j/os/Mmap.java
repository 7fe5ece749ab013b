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
     * Maps {@code length} bytes of {@code fd} from {@code offset}, read-write and shared, until {@code arena}
     * closes. The offset need not be page-aligned (vhost-user's mmap_offset is not): the mapping starts at the
     * page holding it and the returned segment starts at the offset itself.
     *
     * <p>The file must cover the range: touching a page past its end raises SIGBUS, which kills the JVM.
     *
     * @throws LinuxException when mmap fails
     */
    public static MemorySegment mapShared(FileDescriptor fd, long offset, long length, Arena arena) {
        if (offset < 0 || length <= 0) {
            throw new IllegalArgumentException("bad range: offset " + offset + ", length " + length);
        }
        long lead = offset % PAGE_SIZE;
        long fileOffset = offset - lead;
        long mapLength = Math.addExact(length, lead);
        int n = fd.fd();
        long address = Native.call("mmap(" + fd + ", offset " + offset + ", length " + length + ")",
                st -> (long) MMAP.invokeExact(st, MemorySegment.NULL, mapLength, PROT_READ | PROT_WRITE, MAP_SHARED,
                        n, fileOffset));
        MemorySegment mapping;
        try {
            mapping = MemorySegment.ofAddress(address).reinterpret(mapLength, arena, s -> unmap(s, mapLength));
        } catch (RuntimeException e) { // the arena is closed or owned by another thread: nothing will unmap
            unmap(MemorySegment.ofAddress(address), mapLength);
            throw e;
        }
        return lead == 0 ? mapping : mapping.asSlice(lead, length);
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
