package io.virtio4j.core.error;

/** A buffer address and length that overflow or fall outside the guest memory given to the queue. */
public final class AddressOutOfRangeException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public AddressOutOfRangeException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
