package io.virtio4j.core.error;

/**
 * A buffer with device-readable elements on a queue whose device only writes into the buffers it is given (e.g.
 * virtio-rng's requestq: "the driver MUST NOT place driver-readable buffers into the queue").
 */
public final class UnexpectedReadableException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public UnexpectedReadableException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
