package io.virtio4j.os;

/**
 * A descriptor handed to {@link UnixServerSocket#adopt} is not a listening AF_UNIX stream socket: names the number
 * and what it is instead (not open, not a socket, another family or type, not listening).
 */
public final class NotAListeningSocketException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final int fd;
    private final String found;

    public NotAListeningSocketException(int fd, String found) {
        super("fd " + fd + " is not a listening AF_UNIX stream socket: " + found);
        this.fd = fd;
        this.found = found;
    }

    /** The descriptor number that was refused. */
    public int fd() {
        return fd;
    }

    /** What the descriptor is instead, e.g. "not open (EBADF)", "a SOCK_DGRAM socket", "not listening". */
    public String found() {
        return found;
    }
}
