package io.virtio4j.devices.blk.driver;

/**
 * The device completed a request with a status byte other than OK, IOERR or UNSUPP, or wrote none (the driver
 * pre-sets 0xFF), or (checked by a caller that knows what the request must return) with a used length the request
 * cannot have. The request's slot ({@link #slot()}) is free again when this is thrown: nothing more will come for
 * it. (A used length past the request's writable bytes breaks the queue in the ring code instead.)
 */
public final class BadCompletionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int queue;
    private final int slot;
    private final String field;
    private final long value;

    /** A completion of {@code queue}'s {@code slot} whose {@code field} holds {@code value}, not {@code expected}. */
    public BadCompletionException(int queue, int slot, String field, long value, String expected) {
        super("virtio-blk queue " + queue + ", slot " + slot + ": " + field + " " + value + " (" + expected + ")");
        this.queue = queue;
        this.slot = slot;
        this.field = field;
        this.value = value;
    }

    /** The field found wrong: {@code "status"} or {@code "used length"}. */
    public String field() {
        return field;
    }

    /** What the field held (a status of 0xFF: the device did not write it). */
    public long value() {
        return value;
    }

    public int queue() {
        return queue;
    }

    public int slot() {
        return slot;
    }
}
