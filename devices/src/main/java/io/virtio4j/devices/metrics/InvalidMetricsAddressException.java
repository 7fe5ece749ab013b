package io.virtio4j.devices.metrics;

/** A metrics endpoint address that is not {@code unix:PATH} or {@code tcp:HOST:PORT}, or that is refused. */
public final class InvalidMetricsAddressException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String value;

    public InvalidMetricsAddressException(String value, String reason) {
        super(value + ": " + reason);
        this.value = value;
    }

    /** The address as given. */
    public String value() {
        return value;
    }
}
