package io.virtio4j.core.error;

/**
 * A buffer element (a non-indirect descriptor) has length 0, which this library refuses on both sides (see
 * {@link io.virtio4j.core.device.SplitDeviceQueue}, "Zero-length elements").
 */
public final class ZeroLengthElementException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public ZeroLengthElementException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
