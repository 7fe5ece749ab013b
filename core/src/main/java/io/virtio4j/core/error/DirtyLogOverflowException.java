package io.virtio4j.core.error;

/**
 * A write into guest memory whose page has no bit in the dirty log: the front-end sized the log (vhost-user
 * SET_LOG_BASE) for less guest memory than the queue writes into. The write itself is done (the memory is the
 * guest's), but it cannot be logged, so a migration would lose it: the queue breaks, as after a violation.
 * {@link #field()} is {@code log}, {@link #value()} the guest page number that has no bit.
 */
public final class DirtyLogOverflowException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public DirtyLogOverflowException(long page, long logBytes) {
        super("log", page, "guest page " + Long.toUnsignedString(page) + " has no bit in the dirty log of " + logBytes
                + " bytes (it covers pages [0, " + logBytes * 8 + "), 4 KiB each)");
    }
}
