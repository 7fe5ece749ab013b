package io.virtio4j.core.error;

/** An indirect descriptor inside an indirect table: only one level is allowed. */
public final class NestedIndirectException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public NestedIndirectException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
