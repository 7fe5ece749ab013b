package io.virtio4j.devices;

/**
 * A device option out of range or not allowed with the others. Names the option as the library calls it, so that a
 * front end (the CLI) can say which of its own flags that is. Each device throws its own subclass
 * ({@code InvalidBlkOptionException}, {@code InvalidNetOptionException}): the type says whose option it is.
 */
public abstract class InvalidDeviceOptionException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String option;
    private final transient Object value;

    protected InvalidDeviceOptionException(String option, Object value, String reason) {
        super(option + "=" + value + ": " + reason);
        this.option = option;
        this.value = value;
    }

    /** The option, as the library names it. */
    public final String option() {
        return option;
    }

    /** The value refused (as given, or a description of it). */
    public final Object value() {
        return value;
    }
}
