package io.virtio4j.core.error;

/** An event suppression structure holds the reserved mode 3. */
public final class ReservedEventModeException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public ReservedEventModeException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
