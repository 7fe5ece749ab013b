package io.virtio4j.core.error;

/**
 * The other side wrote something the protocol forbids. Names the offending field and its value.
 * Raising one marks the queue broken: every later call on it fails fast with
 * {@link QueueBrokenException} until the queue is reset; other queues keep working.
 */
public abstract class RingViolationException extends VirtqueueException {
    private static final long serialVersionUID = 1L;

    private final String field;
    private final long value;

    protected RingViolationException(String field, long value, String reason) {
        super(field + "=" + value + ": " + reason);
        this.field = field;
        this.value = value;
    }

    /** Which field was wrong, e.g. {@code "desc[7].next"} or {@code "avail.idx"}. */
    public String field() {
        return field;
    }

    /** The value found in that field. */
    public long value() {
        return value;
    }
}
