package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
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
    /** Seals may be added (F_ADD_SEALS); without it the file starts sealed with F_SEAL_SEAL. */
    private static final int MFD_ALLOW_SEALING = 0x0002;
    private static final int F_ADD_SEALS = 1033;
    private static final int F_GET_SEALS = 1034;
    /** No further seals may be added. */
    public static final int F_SEAL_SEAL = 0x0001;
    /** The file may not shrink. */
    public static final int F_SEAL_SHRINK = 0x0002;
    /** The file may not grow. */
    public static final int F_SEAL_GROW = 0x0004;
    /** fcntl(int, int, ...) with one int argument: variadic from the third. */
    private static final MethodHandle FCNTL_INT = Native.downcallErrno("fcntl", Linker.Option.firstVariadicArg(2),
            JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
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

    /**
     * Creates a memfd of {@code size} zero bytes, close-on-exec, sealed so that its size never changes again
     * (F_SEAL_GROW, F_SEAL_SHRINK) and no other seal can be added or removed (F_SEAL_SEAL): memory handed to a peer
     * that maps it, where a peer shrinking it would make our accesses past the new end fault (SIGBUS).
     */
    public static FileDescriptor createSealed(String name, long size) {
        FileDescriptor fd = create(name, size, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        try {
            int n = fd.fd();
            int seals = F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
            Native.call("fcntl(" + fd + ", F_ADD_SEALS)", st -> (int) FCNTL_INT.invokeExact(st, n, F_ADD_SEALS, seals));
            return fd;
        } catch (RuntimeException e) {
            fd.close();
            throw e;
        }
    }

    /** The seals of a memfd (F_GET_SEALS): a mask of the {@code F_SEAL_*} bits. */
    public static int seals(FileDescriptor fd) {
        int n = fd.fd();
        return (int) Native.call("fcntl(" + fd + ", F_GET_SEALS)", st -> (int) FCNTL_INT.invokeExact(st, n, F_GET_SEALS, 0));
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
