package io.virtio4j.core.error;

/** The device claims to have written more bytes than the buffer's writable part holds. */
public final class UsedLengthTooLargeException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public UsedLengthTooLargeException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
