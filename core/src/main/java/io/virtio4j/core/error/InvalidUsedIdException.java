package io.virtio4j.core.error;

/** The device returned a used id that is not a head of a buffer in flight, or is out of range. */
public final class InvalidUsedIdException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public InvalidUsedIdException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
