package io.virtio4j.core.error;

/** A call on a queue that an earlier ring violation has broken. The cause is that violation. */
public final class QueueBrokenException extends VirtqueueException {
    private static final long serialVersionUID = 1L;

    public QueueBrokenException(String queue, RingViolationException cause) {
        super(queue + " is broken since: " + cause.getMessage(), cause);
    }

    public RingViolationException violation() {
        return (RingViolationException) getCause();
    }
}
