package io.virtio4j.devices.blk;

import io.virtio4j.devices.InvalidDeviceOptionException;

/**
 * A {@link BlkDevice} or backing-store option out of range or not allowed with the others. Names the option as the
 * library calls it ({@code queues}, {@code blockSize}, {@code depth}, {@code io}, {@code size}, {@code file},
 * {@code id}, ...), so that a front end (the CLI) can say which of its own flags that is.
 */
public final class InvalidBlkOptionException extends InvalidDeviceOptionException {
    private static final long serialVersionUID = 1L;

    public InvalidBlkOptionException(String option, Object value, String reason) {
        super(option, value, reason);
    }

    public InvalidBlkOptionException(String option, Object value, String reason, Throwable cause) {
        this(option, value, reason);
        initCause(cause);
    }
}
