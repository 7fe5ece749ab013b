package io.virtio4j.core.error;

/** A chain (direct prefix plus indirect table) has more elements than the queue size allows. */
public final class ChainTooLongException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public ChainTooLongException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
