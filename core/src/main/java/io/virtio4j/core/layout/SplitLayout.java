package io.virtio4j.core.layout;

/**
 * Byte layout of a virtio 1.x split virtqueue: every offset and size in one place.
 *
 * <p>All multi-byte fields are little-endian. The three areas (descriptor table, available ring,
 * used ring) may live at independent addresses; their sizes and minimum alignments are given here.
 */
public final class SplitLayout {
    private SplitLayout() {
    }

    /** Largest split queue size: the largest power of two that a free-running 16-bit index can tell full from empty. */
    public static final int MAX_QUEUE_SIZE = 32768;

    // ---- descriptor (virtq_desc, 16 bytes) ----
    public static final int DESC_SIZE = 16;
    public static final int DESC_ADDR = 0;
    public static final int DESC_LEN = 8;
    public static final int DESC_FLAGS = 12;
    public static final int DESC_NEXT = 14;
    public static final int DESC_ALIGN = 16;

    public static final int DESC_F_NEXT = 0x1;
    public static final int DESC_F_WRITE = 0x2;
    public static final int DESC_F_INDIRECT = 0x4;

    // ---- available ring (virtq_avail), written by the driver ----
    public static final int AVAIL_FLAGS = 0;
    public static final int AVAIL_IDX = 2;
    public static final int AVAIL_RING = 4;
    public static final int AVAIL_ENTRY_SIZE = 2;
    public static final int AVAIL_ALIGN = 2;
    public static final int AVAIL_F_NO_INTERRUPT = 0x1;

    // ---- used ring (virtq_used), written by the device ----
    public static final int USED_FLAGS = 0;
    public static final int USED_IDX = 2;
    public static final int USED_RING = 4;
    public static final int USED_ELEM_SIZE = 8;
    public static final int USED_ELEM_ID = 0;
    public static final int USED_ELEM_LEN = 4;
    public static final int USED_ALIGN = 4;
    public static final int USED_F_NO_NOTIFY = 0x1;

    public static long descTableBytes(int queueSize) {
        return (long) DESC_SIZE * queueSize;
    }

    /** flags + idx + ring[qsz] + used_event. */
    public static long availRingBytes(int queueSize) {
        return 6L + (long) AVAIL_ENTRY_SIZE * queueSize;
    }

    /** flags + idx + ring[qsz] + avail_event. */
    public static long usedRingBytes(int queueSize) {
        return 6L + (long) USED_ELEM_SIZE * queueSize;
    }

    public static long descOffset(int index) {
        return (long) DESC_SIZE * index;
    }

    public static long availEntryOffset(int slot) {
        return AVAIL_RING + (long) AVAIL_ENTRY_SIZE * slot;
    }

    /** used_event lives after the available ring's entries. */
    public static long usedEventOffset(int queueSize) {
        return AVAIL_RING + (long) AVAIL_ENTRY_SIZE * queueSize;
    }

    public static long usedElemOffset(int slot) {
        return USED_RING + (long) USED_ELEM_SIZE * slot;
    }

    /** avail_event lives after the used ring's elements. */
    public static long availEventOffset(int queueSize) {
        return USED_RING + (long) USED_ELEM_SIZE * queueSize;
    }

    /** Offset of the used ring in the legacy contiguous layout with queue alignment {@code align}. */
    public static long legacyUsedOffset(int queueSize, long align) {
        return roundUp(descTableBytes(queueSize) + availRingBytes(queueSize), align);
    }

    /** Total bytes of the legacy contiguous layout (Linux {@code vring_size}). */
    public static long legacyTotalBytes(int queueSize, long align) {
        return legacyUsedOffset(queueSize, align) + usedRingBytes(queueSize);
    }

    public static long roundUp(long value, long align) {
        return (value + align - 1) / align * align;
    }

    public static boolean isValidQueueSize(int queueSize) {
        return queueSize > 0 && queueSize <= MAX_QUEUE_SIZE && Integer.bitCount(queueSize) == 1;
    }

    /** @throws IllegalArgumentException when {@code queueSize} is not a power of two up to {@link #MAX_QUEUE_SIZE} */
    public static void requireValidQueueSize(int queueSize) {
        if (!isValidQueueSize(queueSize)) {
            throw new IllegalArgumentException("queue size " + queueSize + " is not a power of two in [1, "
                    + MAX_QUEUE_SIZE + "]");
        }
    }

    /**
     * {@code vring_need_event}: true when {@code event} lies in {@code [old, new)} modulo 2^16, i.e. one
     * of the entries just published is the one the other side asked to be told about.
     */
    public static boolean needEvent(int event, int newIdx, int oldIdx) {
        return ((newIdx - event - 1) & 0xFFFF) < ((newIdx - oldIdx) & 0xFFFF);
    }
}
