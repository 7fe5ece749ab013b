package io.virtio4j.devices.rng;

import io.virtio4j.devices.InvalidDeviceOptionException;

/** An {@link RngSource} option that cannot be used ({@code source}: the file; {@code seed}). */
public final class InvalidRngOptionException extends InvalidDeviceOptionException {
    private static final long serialVersionUID = 1L;

    public InvalidRngOptionException(String option, Object value, String reason) {
        super(option, value, reason);
    }
}
