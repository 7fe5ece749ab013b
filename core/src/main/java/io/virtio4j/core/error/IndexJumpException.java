package io.virtio4j.core.error;

/** A ring index moved forward by more than the queue size since it was last seen. */
public final class IndexJumpException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public IndexJumpException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
