package io.virtio4j.core.layout;

/**
 * Byte layout of a virtio 1.x packed virtqueue (VIRTIO_F_RING_PACKED): every offset, size and flag in one place.
 *
 * <p>Three areas: the descriptor ring (16 bytes per entry, written by both sides: the driver makes descriptors
 * available, the device overwrites them as used), the driver event suppression structure (written by the driver,
 * controls used-buffer notifications) and the device event suppression structure (written by the device, controls
 * kicks). All fields little-endian.
 */
public final class PackedLayout {
    private PackedLayout() {
    }

    /** Largest packed queue size: positions are 15 bits, the 16th is the wrap counter. */
    public static final int MAX_QUEUE_SIZE = 32768;

    // ---- descriptor (pvirtq_desc, 16 bytes) ----
    public static final int DESC_SIZE = 16;
    public static final int DESC_ADDR = 0;
    public static final int DESC_LEN = 8;
    public static final int DESC_ID = 12;
    public static final int DESC_FLAGS = 14;
    public static final int DESC_ALIGN = 16;

    public static final int DESC_F_NEXT = 0x1;
    public static final int DESC_F_WRITE = 0x2;
    public static final int DESC_F_INDIRECT = 0x4;
    /** Availability marker: equals the driver's wrap counter when made available. */
    public static final int DESC_F_AVAIL = 1 << 7;
    /** Used marker: equals the device's wrap counter when used (and then AVAIL does too). */
    public static final int DESC_F_USED = 1 << 15;

    // ---- event suppression (pvirtq_event_suppress, 4 bytes) ----
    public static final int EVENT_OFF_WRAP = 0;
    public static final int EVENT_FLAGS = 2;
    public static final int EVENT_SIZE = 4;
    public static final int EVENT_ALIGN = 4;
    /** Bit 15 of off_wrap: the wrap counter of the descriptor offset in bits 0-14. */
    public static final int EVENT_WRAP_BIT = 0x8000;
    public static final int EVENT_OFF_MASK = 0x7FFF;

    public static final int EVENT_F_ENABLE = 0x0;
    public static final int EVENT_F_DISABLE = 0x1;
    /** Notify only for the descriptor at off_wrap; only with VIRTIO_F_EVENT_IDX. */
    public static final int EVENT_F_DESC = 0x2;
    public static final int EVENT_F_MODE_MASK = 0x3;

    public static long descRingBytes(int queueSize) {
        return (long) DESC_SIZE * queueSize;
    }

    /** Whether {@code flags} mark a descriptor available to a device whose wrap counter is {@code wrap}. */
    public static boolean isAvailable(int flags, boolean wrap) {
        boolean a = (flags & DESC_F_AVAIL) != 0;
        boolean u = (flags & DESC_F_USED) != 0;
        return a == wrap && u != wrap;
    }

    /** Whether {@code flags} mark a descriptor used for a driver whose used wrap counter is {@code wrap}. */
    public static boolean isUsed(int flags, boolean wrap) {
        boolean a = (flags & DESC_F_AVAIL) != 0;
        boolean u = (flags & DESC_F_USED) != 0;
        return a == wrap && u == wrap;
    }

    /** The AVAIL/USED bits a driver with wrap counter {@code wrap} writes to make a descriptor available. */
    public static int availBits(boolean wrap) {
        return wrap ? DESC_F_AVAIL : DESC_F_USED;
    }

    /** The AVAIL/USED bits a device with wrap counter {@code wrap} writes to mark a descriptor used. */
    public static int usedBits(boolean wrap) {
        return wrap ? DESC_F_AVAIL | DESC_F_USED : 0;
    }

    public static boolean isValidQueueSize(int queueSize) {
        return queueSize > 0 && queueSize <= MAX_QUEUE_SIZE;
    }

    /** @throws IllegalArgumentException when {@code queueSize} is not in [1, {@link #MAX_QUEUE_SIZE}] */
    public static void requireValidQueueSize(int queueSize) {
        if (!isValidQueueSize(queueSize)) {
            throw new IllegalArgumentException("packed queue size " + queueSize + " is not in [1, " + MAX_QUEUE_SIZE + "]");
        }
    }

    /**
     * The packed form of the event-index decision (Linux {@code virtqueue_kick_prepare_packed} and
     * {@code virtqueue_notify_packed}): the other side asked to be told about position {@code offWrap} (offset and
     * wrap counter); this side moved its position from {@code old} to {@code new} (ring offsets, {@code new} with
     * wrap counter {@code newWrap}, possibly wrapped past the ring's end). An event in the previous lap is taken
     * as an offset below zero, so that {@link SplitLayout#needEvent} decides on the unwrapped line.
     */
    public static boolean needEvent(int offWrap, int queueSize, int oldPos, int newPos, boolean newWrap) {
        int event = offWrap & EVENT_OFF_MASK;
        boolean eventWrap = (offWrap & EVENT_WRAP_BIT) != 0;
        if (eventWrap != newWrap) {
            event -= queueSize;
        }
        return SplitLayout.needEvent(event & 0xFFFF, newPos, oldPos);
    }
}
