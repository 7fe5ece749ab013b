package io.virtio4j.devices.blk.driver;

/**
 * The device completed a request in a way the spec does not allow: a status byte other than OK, IOERR or UNSUPP
 * (or none written: the driver pre-sets 0xFF), or a used length past the request's writable bytes. The request's
 * slot ({@link #slot()}) is free again when this is thrown: nothing more will come for it.
 */
public final class BadCompletionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int queue;
    private final int slot;

    BadCompletionException(int queue, int slot, String field, long value, String expected) {
        super("virtio-blk queue " + queue + ", slot " + slot + ": " + field + " " + value + " (" + expected + ")");
        this.queue = queue;
        this.slot = slot;
    }

    public int queue() {
        return queue;
    }

    public int slot() {
        return slot;
    }
}
