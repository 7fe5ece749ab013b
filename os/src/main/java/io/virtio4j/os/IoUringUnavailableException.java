package io.virtio4j.os;

/**
 * This process may not use io_uring: the kernel has none (ENOSYS), or refuses it (EPERM: the sysctl
 * {@code kernel.io_uring_disabled} is 2, or 1 and this process is not in its group; or a seccomp filter, as a
 * container runtime's default profile installs). The message says which and names the setting, so that a command can
 * tell its user to take another I/O engine.
 */
public final class IoUringUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int errno;

    IoUringUnavailableException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    /** ENOSYS or EPERM: what io_uring_setup answered. */
    public int errno() {
        return errno;
    }
}
