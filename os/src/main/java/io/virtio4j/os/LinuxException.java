package io.virtio4j.os;

/** A Linux call failed: carries the call's name, the errno value, its symbolic name and strerror text. */
public final class LinuxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int errno;

    public LinuxException(String call, int errno) {
        super(call + " failed: " + Errno.name(errno) + " (" + errno + "): " + Errno.describe(errno));
        this.call = call;
        this.errno = errno;
    }

    public String call() {
        return call;
    }

    public int errno() {
        return errno;
    }

    public String errnoName() {
        return Errno.name(errno);
    }
}
