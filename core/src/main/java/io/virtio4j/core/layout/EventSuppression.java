package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * Flyweight over a packed ring's event suppression structure (off_wrap, flags). Read and written as one 32-bit
 * word, as Linux does, so the reader sees a consistent pair: a DESC mode with the offset that came with it.
 */
public final class EventSuppression {
    private static final VarHandle U32_VH = Le.U32.varHandle();
    /** Where each field sits in the little-endian word: off_wrap in the low half, flags in the high half. */
    private static final int OFF_WRAP_SHIFT = 8 * PackedLayout.EVENT_OFF_WRAP;
    private static final int FLAGS_SHIFT = 8 * PackedLayout.EVENT_FLAGS;

    private final MemorySegment seg;

    public EventSuppression(MemorySegment seg) {
        if (seg.byteSize() < PackedLayout.EVENT_SIZE || seg.address() % PackedLayout.EVENT_ALIGN != 0) {
            throw new IllegalArgumentException("event suppression structure needs " + PackedLayout.EVENT_SIZE
                    + " bytes aligned to " + PackedLayout.EVENT_ALIGN + ", got " + seg.byteSize() + " at 0x"
                    + Long.toHexString(seg.address()));
        }
        this.seg = seg;
    }

    /** Acquire load of the whole structure: off_wrap in bits 0-15, flags in bits 16-31. */
    public int wordAcquire() {
        return (int) U32_VH.getAcquire(seg, 0L);
    }

    /** Release store of both fields at once. */
    public void release(int offWrap, int flags) {
        U32_VH.setRelease(seg, 0L, ((offWrap & 0xFFFF) << OFF_WRAP_SHIFT) | ((flags & 0xFFFF) << FLAGS_SHIFT));
    }

    public static int offWrap(int word) {
        return (word >>> OFF_WRAP_SHIFT) & 0xFFFF;
    }

    /** The whole flags field (mode and reserved bits), as the other side wrote it. */
    public static int flags(int word) {
        return (word >>> FLAGS_SHIFT) & 0xFFFF;
    }

    public static int mode(int word) {
        return flags(word) & PackedLayout.EVENT_F_MODE_MASK;
    }
}
