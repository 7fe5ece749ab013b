package io.virtio4j.core.error;

/** A device-readable descriptor after a device-writable one in the same chain. */
public final class ReadableAfterWritableException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public ReadableAfterWritableException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
