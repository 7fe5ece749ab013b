package io.virtio4j.devices.blk.driver;

/**
 * The device completed a request with a status byte other than OK, IOERR or UNSUPP, or wrote none (the driver
 * pre-sets 0xFF). The request's slot ({@link #slot()}) is free again when this is thrown: nothing more will come
 * for it. (A used length past the request's writable bytes breaks the queue in the ring code instead.)
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
