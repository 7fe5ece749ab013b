package io.virtio4j.core.error;

/** The driver tried to add a buffer that needs more free descriptors than the queue has now. */
public final class RingFullException extends VirtqueueException {
    private static final long serialVersionUID = 1L;

    private final int needed;
    private final int free;

    public RingFullException(int needed, int free) {
        super("ring full: the buffer needs " + needed + " descriptor(s), " + free + " free");
        this.needed = needed;
        this.free = free;
    }

    public int needed() {
        return needed;
    }

    public int free() {
        return free;
    }
}
