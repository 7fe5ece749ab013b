package io.virtio4j.core.error;

/** An indirect table whose length is zero, not a multiple of 16, or larger than the queue size. */
public final class InvalidIndirectTableException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public InvalidIndirectTableException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
