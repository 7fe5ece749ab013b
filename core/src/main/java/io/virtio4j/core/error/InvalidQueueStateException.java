package io.virtio4j.core.error;

/**
 * A queue state to restart from does not fit the queue: a position beyond the ring, or more buffers outstanding
 * than the queue holds. Names the field and its value. The queue is not restarted.
 */
public final class InvalidQueueStateException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public InvalidQueueStateException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
