package io.virtio4j.core.error;

/**
 * The driver rewrote an available ring entry, or the descriptors of a chain it names, after the device had read
 * them: a device that gave chains back ({@code unpop}) and took them again found other chains, or less room.
 * The driver must not touch what it made available until the device has used it.
 */
public final class AvailableChainChangedException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public AvailableChainChangedException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
