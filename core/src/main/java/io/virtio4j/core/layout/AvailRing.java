package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.layout.SplitLayout.AVAIL_FLAGS;
import static io.virtio4j.core.layout.SplitLayout.AVAIL_IDX;

/**
 * Flyweight over a split available ring (virtq_avail). Written by the driver, read by the device.
 *
 * <p>Method names state the memory ordering of each access. Ring entries are plain: they are ordered
 * by the release store of {@code idx} (driver) and the acquire load of {@code idx} (device).
 */
public final class AvailRing {
    private final MemorySegment seg;
    private final int queueSize;
    private final long usedEventOffset;

    public AvailRing(MemorySegment seg, int queueSize) {
        if (seg.byteSize() < SplitLayout.availRingBytes(queueSize)) {
            throw new IllegalArgumentException("available ring needs " + SplitLayout.availRingBytes(queueSize)
                    + " bytes for queue size " + queueSize + ", segment has " + seg.byteSize());
        }
        if (seg.address() % SplitLayout.AVAIL_ALIGN != 0) {
            throw new IllegalArgumentException("available ring address 0x" + Long.toHexString(seg.address())
                    + " is not " + SplitLayout.AVAIL_ALIGN + "-byte aligned");
        }
        this.seg = seg;
        this.queueSize = queueSize;
        this.usedEventOffset = SplitLayout.usedEventOffset(queueSize);
    }

    public MemorySegment segment() {
        return seg;
    }

    public int queueSize() {
        return queueSize;
    }

    public int idxAcquire() {
        return Short.toUnsignedInt((short) Le.U16_VH.getAcquire(seg, (long) AVAIL_IDX));
    }

    /** Release store: every entry and descriptor written before becomes visible no later than the index. */
    public void idxRelease(int idx) {
        Le.setU16Release(seg, AVAIL_IDX, idx);
    }

    public int flagsAcquire() {
        return Short.toUnsignedInt((short) Le.U16_VH.getAcquire(seg, (long) AVAIL_FLAGS));
    }

    public void flagsRelease(int flags) {
        Le.setU16Release(seg, AVAIL_FLAGS, flags);
    }

    public int entry(int slot) {
        return Short.toUnsignedInt(seg.get(Le.U16, SplitLayout.availEntryOffset(slot)));
    }

    public void entry(int slot, int head) {
        seg.set(Le.U16, SplitLayout.availEntryOffset(slot), (short) head);
    }

    public int usedEventAcquire() {
        return Short.toUnsignedInt((short) Le.U16_VH.getAcquire(seg, usedEventOffset));
    }

    public void usedEventRelease(int event) {
        Le.setU16Release(seg, usedEventOffset, event);
    }
}
