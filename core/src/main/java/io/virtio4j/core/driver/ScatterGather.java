package io.virtio4j.core.driver;

/**
 * A reusable list of buffer elements for one {@link SplitDriverQueue#add}: device-readable elements first,
 * then device-writable ones. Owned by the caller and refilled for every buffer, so adding allocates nothing.
 *
 * <p>Zero-length elements are refused here, because this library's devices refuse them as a ring violation (see
 * {@link io.virtio4j.core.device.SplitDeviceQueue}, "Zero-length elements"), as QEMU and libvhost-user do.
 */
public final class ScatterGather {
    private final long[] addr;
    private final int[] len;
    private int readable;
    private int writable;

    public ScatterGather(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity " + capacity + " < 1");
        }
        addr = new long[capacity];
        len = new int[capacity];
    }

    public ScatterGather clear() {
        readable = 0;
        writable = 0;
        return this;
    }

    /**
     * Appends a device-readable element. Must come before every writable one.
     *
     * @param length unsigned 32-bit length, not 0
     * @throws IllegalArgumentException when {@code length} is 0
     */
    public ScatterGather readable(long guestAddr, int length) {
        if (writable > 0) {
            throw new IllegalStateException("device-readable elements must precede device-writable ones");
        }
        put(guestAddr, length);
        readable++;
        return this;
    }

    /**
     * Appends a device-writable element.
     *
     * @param length unsigned 32-bit length, not 0
     * @throws IllegalArgumentException when {@code length} is 0
     */
    public ScatterGather writable(long guestAddr, int length) {
        put(guestAddr, length);
        writable++;
        return this;
    }

    private void put(long guestAddr, int length) {
        if (length == 0) {
            throw new IllegalArgumentException("zero-length element at guest address 0x" + Long.toHexString(guestAddr)
                    + ": devices refuse them");
        }
        int i = readable + writable;
        if (i == addr.length) {
            throw new IllegalStateException("scatter-gather list is full (" + addr.length + " elements)");
        }
        addr[i] = guestAddr;
        len[i] = length;
    }

    public int count() {
        return readable + writable;
    }

    public int readableCount() {
        return readable;
    }

    public int writableCount() {
        return writable;
    }

    public long addr(int i) {
        return addr[i];
    }

    /** Element length as an unsigned 32-bit value stored in an int. */
    public int len(int i) {
        return len[i];
    }

    public boolean isWritable(int i) {
        return i >= readable;
    }

    /**
     * Checks what {@link DriverQueue#add} needs of a buffer and its token, whatever the ring format: at least one
     * element, no more than the queue size (virtio 1.x 2.7.5.3.1 for split, 2.8.10 for packed: a buffer, indirect or
     * not, is never longer than the queue), and a token.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    void requireAddable(Object token, int queueSize) {
        int elements = count();
        if (elements == 0) {
            throw new IllegalArgumentException("a buffer needs at least one element");
        }
        if (elements > queueSize) {
            throw new IllegalArgumentException("a buffer of " + elements + " elements exceeds the queue size " + queueSize);
        }
        if (token == null) {
            throw new IllegalArgumentException("token must not be null");
        }
    }
}
