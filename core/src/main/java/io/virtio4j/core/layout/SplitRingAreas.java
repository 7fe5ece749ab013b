package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;

/**
 * The three areas of one split virtqueue, each a segment that may sit at its own address.
 *
 * @param queueSize  number of entries, a power of two up to {@link SplitLayout#MAX_QUEUE_SIZE}
 * @param descTable  descriptor table, at least {@code 16 * queueSize} bytes, 16-byte aligned
 * @param availRing  available ring, at least {@code 6 + 2 * queueSize} bytes, 2-byte aligned
 * @param usedRing   used ring, at least {@code 6 + 8 * queueSize} bytes, 4-byte aligned
 */
public record SplitRingAreas(int queueSize, MemorySegment descTable, MemorySegment availRing, MemorySegment usedRing)
        implements RingAreas {

    public SplitRingAreas {
        SplitLayout.requireValidQueueSize(queueSize);
        if (descTable.byteSize() < SplitLayout.descTableBytes(queueSize)) {
            throw new IllegalArgumentException("descriptor table needs " + SplitLayout.descTableBytes(queueSize)
                    + " bytes, segment has " + descTable.byteSize());
        }
        if (descTable.address() % SplitLayout.DESC_ALIGN != 0) {
            throw new IllegalArgumentException("descriptor table address 0x" + Long.toHexString(descTable.address())
                    + " is not " + SplitLayout.DESC_ALIGN + "-byte aligned");
        }
        // the ring flyweights check their own sizes and alignment
        new AvailRing(availRing, queueSize);
        new UsedRing(usedRing, queueSize);
    }

    @Override
    public RingFormat format() {
        return RingFormat.SPLIT;
    }

    /** Bytes needed to carve all three areas contiguously with {@link #carve}. */
    public static long contiguousBytes(int queueSize) {
        long avail = SplitLayout.descTableBytes(queueSize);
        long used = SplitLayout.roundUp(avail + SplitLayout.availRingBytes(queueSize), 64);
        return used + SplitLayout.usedRingBytes(queueSize);
    }

    /**
     * Lays the three areas out one after another in {@code seg} (which must be 64-byte aligned), the used
     * ring on its own cache line so the driver's and the device's writes do not share one.
     */
    public static SplitRingAreas carve(MemorySegment seg, int queueSize) {
        long descBytes = SplitLayout.descTableBytes(queueSize);
        long usedOff = SplitLayout.roundUp(descBytes + SplitLayout.availRingBytes(queueSize), 64);
        return new SplitRingAreas(queueSize,
                seg.asSlice(0, descBytes),
                seg.asSlice(descBytes, SplitLayout.availRingBytes(queueSize)),
                seg.asSlice(usedOff, SplitLayout.usedRingBytes(queueSize)));
    }
}
