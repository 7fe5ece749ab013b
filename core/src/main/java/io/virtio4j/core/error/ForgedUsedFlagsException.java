package io.virtio4j.core.error;

/** A packed descriptor where the device reads next carries AVAIL = USED = the device's wrap counter: a pattern no correct driver leaves there (the driver set USED bits, or its wrap counter lies). */
public final class ForgedUsedFlagsException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public ForgedUsedFlagsException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
