package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** Anonymous shared memory files (memfd_create): the memory vhost-user front-ends and back-ends share. */
public final class Memfd {
    private Memfd() {
    }

    private static final int MFD_CLOEXEC = 0x0001;
    /** Backed by hugetlbfs pages of the system's default huge page size. */
    private static final int MFD_HUGETLB = 0x0004;
    private static final MethodHandle MEMFD_CREATE = Native.downcallErrno("memfd_create", JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle FTRUNCATE = Native.downcallErrno("ftruncate", JAVA_INT, JAVA_INT, JAVA_LONG);

    /**
     * Creates a memfd of {@code size} zero bytes, close-on-exec (it reaches other processes only when sent).
     *
     * @param name shows in /proc/PID/maps as {@code /memfd:name}; at most 249 bytes
     */
    public static FileDescriptor create(String name, long size) {
        return create(name, size, MFD_CLOEXEC);
    }

    /**
     * Creates a memfd of {@code size} zero bytes on huge pages (MFD_HUGETLB), close-on-exec. {@code size} must be a
     * multiple of the default huge page size; whether pages are available shows only when the file is mapped
     * (mmap fails with ENOMEM when the pool is empty).
     */
    public static FileDescriptor createHugetlb(String name, long size) {
        return create(name, size, MFD_CLOEXEC | MFD_HUGETLB);
    }

    private static FileDescriptor create(String name, long size, int flags) {
        FileDescriptor fd;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cName = arena.allocateFrom(name);
            fd = FileDescriptor.adopt((int) Native.call("memfd_create(" + name + ")",
                    st -> (int) MEMFD_CREATE.invokeExact(st, cName, flags)));
        }
        try {
            truncate(fd, size);
            return fd;
        } catch (RuntimeException e) {
            fd.close();
            throw e;
        }
    }

    /** Sets the file's size (ftruncate): growing adds zero bytes, shrinking drops the tail. */
    public static void truncate(FileDescriptor fd, long size) {
        if (size < 0) {
            throw new IllegalArgumentException("negative size " + size);
        }
        int n = fd.fd();
        Native.call("ftruncate(" + fd + ", " + size + ")", st -> (int) FTRUNCATE.invokeExact(st, n, size));
    }
}
