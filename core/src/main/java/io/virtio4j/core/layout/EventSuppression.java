package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * Flyweight over a packed ring's event suppression structure (off_wrap, flags). Read and written as one 32-bit
 * word, as Linux does, so the reader sees a consistent pair: a DESC mode with the offset that came with it.
 */
public final class EventSuppression {
    private static final VarHandle U32_VH = Le.U32.varHandle();

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
        U32_VH.setRelease(seg, 0L, (offWrap & 0xFFFF) | (flags << 16));
    }

    public static int offWrap(int word) {
        return word & 0xFFFF;
    }

    public static int mode(int word) {
        return (word >>> 16) & PackedLayout.EVENT_F_MODE_MASK;
    }
}
