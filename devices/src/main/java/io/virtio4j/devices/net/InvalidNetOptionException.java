package io.virtio4j.devices.net;

import io.virtio4j.devices.InvalidDeviceOptionException;

/**
 * A {@link NetDevice} option out of range or not allowed with the others. Names the option as the library calls it
 * (the record component of {@link NetDevice.Options}: {@code pairs}, {@code weight}, {@code mode},
 * {@code notification}, ..., or {@code txPoll}), so that a front end (the CLI) can say which of its own flags that is.
 */
public final class InvalidNetOptionException extends InvalidDeviceOptionException {
    private static final long serialVersionUID = 1L;

    public InvalidNetOptionException(String option, Object value, String reason) {
        super(option, value, reason);
    }
}
