package io.virtio4j.os;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** errno values this project meets, their symbolic names, and strerror text. */
public final class Errno {
    private Errno() {
    }

    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int ENFILE = 23;
    public static final int EMFILE = 24;
    public static final int ENOSPC = 28;
    public static final int ENOTTY = 25;
    public static final int EPIPE = 32;
    public static final int ENOSYS = 38;
    public static final int EBADFD = 77;
    public static final int EMSGSIZE = 90;
    public static final int ENOTSOCK = 88;
    public static final int EADDRINUSE = 98;
    public static final int ECONNABORTED = 103;
    public static final int ECONNRESET = 104;
    public static final int ENOBUFS = 105;
    public static final int ENOTCONN = 107;
    public static final int ECONNREFUSED = 111;
    public static final int EOPNOTSUPP = 95;
    public static final int EROFS = 30;

    private static final String[] NAMES = new String[128];

    static {
        NAMES[EPERM] = "EPERM";
        NAMES[ENOENT] = "ENOENT";
        NAMES[ESRCH] = "ESRCH";
        NAMES[EINTR] = "EINTR";
        NAMES[EIO] = "EIO";
        NAMES[EBADF] = "EBADF";
        NAMES[EAGAIN] = "EAGAIN";
        NAMES[ENOMEM] = "ENOMEM";
        NAMES[EACCES] = "EACCES";
        NAMES[EFAULT] = "EFAULT";
        NAMES[EBUSY] = "EBUSY";
        NAMES[EEXIST] = "EEXIST";
        NAMES[ENODEV] = "ENODEV";
        NAMES[EINVAL] = "EINVAL";
        NAMES[ENFILE] = "ENFILE";
        NAMES[EMFILE] = "EMFILE";
        NAMES[ECONNABORTED] = "ECONNABORTED";
        NAMES[ENOBUFS] = "ENOBUFS";
        NAMES[ENOSPC] = "ENOSPC";
        NAMES[ENOTTY] = "ENOTTY";
        NAMES[EPIPE] = "EPIPE";
        NAMES[ENOSYS] = "ENOSYS";
        NAMES[EBADFD] = "EBADFD";
        NAMES[EMSGSIZE] = "EMSGSIZE";
        NAMES[ENOTSOCK] = "ENOTSOCK";
        NAMES[EADDRINUSE] = "EADDRINUSE";
        NAMES[ECONNRESET] = "ECONNRESET";
        NAMES[ENOTCONN] = "ENOTCONN";
        NAMES[ECONNREFUSED] = "ECONNREFUSED";
        NAMES[EOPNOTSUPP] = "EOPNOTSUPP";
        NAMES[EROFS] = "EROFS";
    }

    private static final MethodHandle STRERROR = Native.downcall("strerror", ADDRESS, JAVA_INT);

    public static String name(int errno) {
        String n = errno >= 0 && errno < NAMES.length ? NAMES[errno] : null;
        return n != null ? n : "errno" + errno;
    }

    public static String describe(int errno) {
        try {
            MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
            return s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "unknown error";
        }
    }
}
