package io.virtio4j.core.error;

/** A chain's elements add up to more than the 2^32 bytes the spec allows a chain (virtio 1.x 2.7.5.3.1). */
public final class ChainTooLargeException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public ChainTooLargeException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
