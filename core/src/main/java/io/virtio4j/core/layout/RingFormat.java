package io.virtio4j.core.layout;

/** The two virtqueue formats: split (three rings, 16-bit indices) and packed (one descriptor ring, wrap counters). */
public enum RingFormat {
    SPLIT,
    PACKED;

    /** Whether {@code queueSize} is allowed: a power of two up to 32768 for split, 1 to 32768 for packed. */
    public boolean isValidQueueSize(int queueSize) {
        return this == SPLIT ? SplitLayout.isValidQueueSize(queueSize) : PackedLayout.isValidQueueSize(queueSize);
    }

    /** @throws IllegalArgumentException when {@code queueSize} is not allowed for this format */
    public void requireValidQueueSize(int queueSize) {
        if (this == SPLIT) {
            SplitLayout.requireValidQueueSize(queueSize);
        } else {
            PackedLayout.requireValidQueueSize(queueSize);
        }
    }

    /** Bytes to carve all areas of a ring of {@code queueSize} contiguously with {@link #carve}. */
    public long contiguousBytes(int queueSize) {
        return this == SPLIT ? SplitRingAreas.contiguousBytes(queueSize) : PackedRingAreas.contiguousBytes(queueSize);
    }

    /** Lays a ring of this format out in {@code seg} (64-byte aligned), each side's writes on its own cache lines. */
    public RingAreas carve(java.lang.foreign.MemorySegment seg, int queueSize) {
        return this == SPLIT ? SplitRingAreas.carve(seg, queueSize) : PackedRingAreas.carve(seg, queueSize);
    }
}
