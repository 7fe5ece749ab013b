package io.virtio4j.core.error;

/** A packed NEXT list continues into a ring slot that is not available, although its first descriptor is (the driver must make the first descriptor available last). */
public final class IncompleteListException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public IncompleteListException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
