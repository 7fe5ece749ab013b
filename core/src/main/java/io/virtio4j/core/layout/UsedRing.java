package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.layout.SplitLayout.USED_ELEM_ID;
import static io.virtio4j.core.layout.SplitLayout.USED_ELEM_LEN;
import static io.virtio4j.core.layout.SplitLayout.USED_FLAGS;
import static io.virtio4j.core.layout.SplitLayout.USED_IDX;

/**
 * Flyweight over a split used ring (virtq_used). Written by the device, read by the driver.
 *
 * <p>Method names state the memory ordering of each access. Used elements are plain: they are
 * ordered by the release store of {@code idx} (device) and the acquire load of {@code idx} (driver).
 */
public final class UsedRing {
    private final MemorySegment seg;
    private final int queueSize;
    private final long availEventOffset;

    public UsedRing(MemorySegment seg, int queueSize) {
        if (seg.byteSize() < SplitLayout.usedRingBytes(queueSize)) {
            throw new IllegalArgumentException("used ring needs " + SplitLayout.usedRingBytes(queueSize)
                    + " bytes for queue size " + queueSize + ", segment has " + seg.byteSize());
        }
        if (seg.address() % SplitLayout.USED_ALIGN != 0) {
            throw new IllegalArgumentException("used ring address 0x" + Long.toHexString(seg.address())
                    + " is not " + SplitLayout.USED_ALIGN + "-byte aligned");
        }
        this.seg = seg;
        this.queueSize = queueSize;
        this.availEventOffset = SplitLayout.availEventOffset(queueSize);
    }

    public MemorySegment segment() {
        return seg;
    }

    public int queueSize() {
        return queueSize;
    }

    public int idxAcquire() {
        return Short.toUnsignedInt((short) Le.U16_VH.getAcquire(seg, (long) USED_IDX));
    }

    /** Release store: used elements and the payload written before become visible no later than the index. */
    public void idxRelease(int idx) {
        Le.setU16Release(seg, USED_IDX, idx);
    }

    public int flagsAcquire() {
        return Short.toUnsignedInt((short) Le.U16_VH.getAcquire(seg, (long) USED_FLAGS));
    }

    public void flagsRelease(int flags) {
        Le.setU16Release(seg, USED_FLAGS, flags);
    }

    /** Element id (head index) as written by the device: a raw 32-bit value, to be validated by the reader. */
    public int elemId(int slot) {
        return seg.get(Le.U32, SplitLayout.usedElemOffset(slot) + USED_ELEM_ID);
    }

    /** Element length as written by the device: a raw unsigned 32-bit value. */
    public long elemLen(int slot) {
        return Integer.toUnsignedLong(seg.get(Le.U32, SplitLayout.usedElemOffset(slot) + USED_ELEM_LEN));
    }

    public void elem(int slot, int id, int len) {
        long off = SplitLayout.usedElemOffset(slot);
        seg.set(Le.U32, off + USED_ELEM_ID, id);
        seg.set(Le.U32, off + USED_ELEM_LEN, len);
    }

    public int availEventAcquire() {
        return Short.toUnsignedInt((short) Le.U16_VH.getAcquire(seg, availEventOffset));
    }

    public void availEventRelease(int event) {
        Le.setU16Release(seg, availEventOffset, event);
    }
}
