package io.virtio4j.devices.blk;

/**
 * A {@link BlkDevice} or backing-store option out of range or not allowed with the others. Names the option as the
 * library calls it ({@code queues}, {@code blockSize}, {@code depth}, {@code io}, {@code size}, {@code file},
 * {@code id}, ...), so that a front end (the CLI) can say which of its own flags that is.
 */
public final class InvalidBlkOptionException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String option;
    private final transient Object value;

    public InvalidBlkOptionException(String option, Object value, String reason) {
        super(option + "=" + value + ": " + reason);
        this.option = option;
        this.value = value;
    }

    public InvalidBlkOptionException(String option, Object value, String reason, Throwable cause) {
        this(option, value, reason);
        initCause(cause);
    }

    /** The option, as the library names it. */
    public String option() {
        return option;
    }

    public Object value() {
        return value;
    }
}
