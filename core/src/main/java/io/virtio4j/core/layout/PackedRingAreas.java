package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;

/**
 * The three areas of one packed virtqueue, each a segment that may sit at its own address. In vhost-user's
 * SET_VRING_ADDR they arrive in the split fields: desc = descriptor ring, avail = driver event suppression,
 * used = device event suppression.
 *
 * @param queueSize    number of entries, 1 to {@link PackedLayout#MAX_QUEUE_SIZE}
 * @param descRing     descriptor ring, at least {@code 16 * queueSize} bytes, 16-byte aligned
 * @param driverEvent  driver event suppression structure (written by the driver), 4 bytes, 4-byte aligned
 * @param deviceEvent  device event suppression structure (written by the device), 4 bytes, 4-byte aligned
 */
public record PackedRingAreas(int queueSize, MemorySegment descRing, MemorySegment driverEvent,
                              MemorySegment deviceEvent) implements RingAreas {

    public PackedRingAreas {
        PackedLayout.requireValidQueueSize(queueSize);
        requireArea("descriptor ring", descRing, PackedLayout.descRingBytes(queueSize), PackedLayout.DESC_ALIGN);
        requireArea("driver event suppression", driverEvent, PackedLayout.EVENT_SIZE, PackedLayout.EVENT_ALIGN);
        requireArea("device event suppression", deviceEvent, PackedLayout.EVENT_SIZE, PackedLayout.EVENT_ALIGN);
    }

    private static void requireArea(String name, MemorySegment s, long bytes, int align) {
        if (s.byteSize() < bytes) {
            throw new IllegalArgumentException(name + " needs " + bytes + " bytes, segment has " + s.byteSize());
        }
        if (s.address() % align != 0) {
            throw new IllegalArgumentException(name + " address 0x" + Long.toHexString(s.address())
                    + " is not " + align + "-byte aligned");
        }
    }

    @Override
    public RingFormat format() {
        return RingFormat.PACKED;
    }

    /** Bytes needed to carve all three areas contiguously with {@link #carve}. */
    public static long contiguousBytes(int queueSize) {
        return SplitLayout.roundUp(PackedLayout.descRingBytes(queueSize), 64) + 128;
    }

    /**
     * Lays the areas out one after another in {@code seg} (64-byte aligned): the descriptor ring, then each event
     * suppression structure on its own cache line, so the driver's and the device's writes to them do not share
     * one.
     */
    public static PackedRingAreas carve(MemorySegment seg, int queueSize) {
        long descBytes = PackedLayout.descRingBytes(queueSize);
        long driverOff = SplitLayout.roundUp(descBytes, 64);
        return new PackedRingAreas(queueSize, seg.asSlice(0, descBytes),
                seg.asSlice(driverOff, PackedLayout.EVENT_SIZE), seg.asSlice(driverOff + 64, PackedLayout.EVENT_SIZE));
    }
}
