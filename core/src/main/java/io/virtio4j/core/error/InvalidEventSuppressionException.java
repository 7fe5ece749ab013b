package io.virtio4j.core.error;

/**
 * A packed ring's event suppression structure holds what the spec does not allow: a reserved mode, a DESC mode
 * without VIRTIO_F_EVENT_IDX, or a descriptor offset outside the ring.
 */
public final class InvalidEventSuppressionException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public InvalidEventSuppressionException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
