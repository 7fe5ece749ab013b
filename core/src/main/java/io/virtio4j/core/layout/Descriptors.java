package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.layout.SplitLayout.DESC_ADDR;
import static io.virtio4j.core.layout.SplitLayout.DESC_FLAGS;
import static io.virtio4j.core.layout.SplitLayout.DESC_LEN;
import static io.virtio4j.core.layout.SplitLayout.DESC_NEXT;
import static io.virtio4j.core.layout.SplitLayout.DESC_SIZE;

/**
 * Accessors for split descriptors (virtq_desc) in a descriptor table or an indirect table.
 *
 * <p>Static methods over (segment, table base offset, index) rather than a flyweight instance, so the
 * device can walk an indirect table that lives anywhere in guest memory without allocating a view.
 * Accesses are plain: descriptors are ordered by the release/acquire of the ring index that exposes
 * them. Unaligned layouts are used because an indirect table's address comes from the guest.
 */
public final class Descriptors {
    private Descriptors() {
    }

    public static long addr(MemorySegment seg, long tableBase, int index) {
        return seg.get(Le.U64_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_ADDR);
    }

    /** Length as an unsigned 32-bit value. */
    public static long len(MemorySegment seg, long tableBase, int index) {
        return Integer.toUnsignedLong(seg.get(Le.U32_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_LEN));
    }

    public static int flags(MemorySegment seg, long tableBase, int index) {
        return Short.toUnsignedInt(seg.get(Le.U16_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_FLAGS));
    }

    public static int next(MemorySegment seg, long tableBase, int index) {
        return Short.toUnsignedInt(seg.get(Le.U16_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_NEXT));
    }

    /**
     * The descriptor's last 8 bytes in one load: {@code len} in bits 0-31, {@code flags} in 32-47, {@code next} in
     * 48-63 (take them apart with {@link #lenOf}, {@link #flagsOf}, {@link #nextOf}). A device walking a chain
     * reads every field of every descriptor: one bounds- and liveness-checked access instead of three.
     */
    public static long lenFlagsNext(MemorySegment seg, long tableBase, int index) {
        return seg.get(Le.U64_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_LEN);
    }

    /** Length, unsigned 32-bit, out of a {@link #lenFlagsNext} word. */
    public static long lenOf(long lenFlagsNext) {
        return lenFlagsNext & 0xFFFF_FFFFL;
    }

    /** Flags out of a {@link #lenFlagsNext} word. */
    public static int flagsOf(long lenFlagsNext) {
        return (int) (lenFlagsNext >>> 32) & 0xFFFF;
    }

    /** Next index out of a {@link #lenFlagsNext} word. */
    public static int nextOf(long lenFlagsNext) {
        return (int) (lenFlagsNext >>> 48);
    }

    public static void write(MemorySegment seg, long tableBase, int index, long addr, int len, int flags, int next) {
        long off = tableBase + (long) DESC_SIZE * index;
        seg.set(Le.U64_UNALIGNED, off + DESC_ADDR, addr);
        seg.set(Le.U32_UNALIGNED, off + DESC_LEN, len);
        seg.set(Le.U16_UNALIGNED, off + DESC_FLAGS, (short) flags);
        seg.set(Le.U16_UNALIGNED, off + DESC_NEXT, (short) next);
    }
}
