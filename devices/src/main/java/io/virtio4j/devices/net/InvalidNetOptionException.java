package io.virtio4j.devices.net;

/**
 * A {@link NetDevice} option out of range or not allowed with the others. Names the option as the library calls it
 * ({@code pairs}, {@code weight}, {@code mode}, {@code notification}, ...), so that a front end (the CLI) can say
 * which of its own flags that is.
 */
public final class InvalidNetOptionException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String option;
    private final transient Object value;

    public InvalidNetOptionException(String option, Object value, String reason) {
        super(option + "=" + value + ": " + reason);
        this.option = option;
        this.value = value;
    }

    /** The option, as the library names it (the record component of {@link NetDevice.Options}, or {@code txPoll}). */
    public String option() {
        return option;
    }

    public Object value() {
        return value;
    }
}
