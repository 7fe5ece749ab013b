package io.virtio4j.core.error;

/** A descriptor with both INDIRECT and NEXT set. */
public final class IndirectWithNextException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public IndirectWithNextException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
