package io.virtio4j.core.error;

/** A chain visits more descriptors than its table holds: it loops. */
public final class DescriptorLoopException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public DescriptorLoopException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
