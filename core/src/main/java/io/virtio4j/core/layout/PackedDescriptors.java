package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.layout.PackedLayout.DESC_ADDR;
import static io.virtio4j.core.layout.PackedLayout.DESC_FLAGS;
import static io.virtio4j.core.layout.PackedLayout.DESC_ID;
import static io.virtio4j.core.layout.PackedLayout.DESC_LEN;
import static io.virtio4j.core.layout.PackedLayout.DESC_SIZE;

/**
 * Accessors for packed descriptors in the descriptor ring. Method names state the ordering: the flags word is
 * what publishes a descriptor (the driver's AVAIL/USED bits, then the device's), so it is stored with release and
 * loaded with acquire; addr, len and id are plain, ordered by those.
 *
 * <p>A packed indirect table is an array of packed descriptors (virtio 1.1 {@code pvirtq_indirect_descriptor_table}
 * holds {@code struct pvirtq_desc}): flags sit at byte 14 as in the ring, not at byte 12 as in a split descriptor,
 * so {@link Descriptors} would read the id as flags. The {@code indirect*} accessors read such a table, anywhere
 * in guest memory (hence unaligned layouts, as the address is the guest's choice).
 */
public final class PackedDescriptors {
    private PackedDescriptors() {
    }

    public static long addr(MemorySegment ring, int slot) {
        return ring.get(Le.U64, (long) DESC_SIZE * slot + DESC_ADDR);
    }

    /** Length as an unsigned 32-bit value. */
    public static long len(MemorySegment ring, int slot) {
        return Integer.toUnsignedLong(ring.get(Le.U32, (long) DESC_SIZE * slot + DESC_LEN));
    }

    /**
     * The descriptor's len and id in one plain load: {@code len} in bits 0-31, {@code id} in 32-47 (take them apart
     * with {@link #lenOf} and {@link #idOf}); bits 48-63 hold the flags as this plain load saw them, which a reader
     * must not use (the flags that decide are the ones loaded with acquire). One checked access instead of two.
     */
    public static long lenId(MemorySegment ring, int slot) {
        return ring.get(Le.U64, (long) DESC_SIZE * slot + DESC_LEN);
    }

    /** Length, unsigned 32-bit, out of a {@link #lenId} word. */
    public static long lenOf(long lenId) {
        return lenId & 0xFFFF_FFFFL;
    }

    /** Buffer id out of a {@link #lenId} word. */
    public static int idOf(long lenId) {
        return (int) (lenId >>> 32) & 0xFFFF;
    }

    public static int id(MemorySegment ring, int slot) {
        return Short.toUnsignedInt(ring.get(Le.U16, (long) DESC_SIZE * slot + DESC_ID));
    }

    /**
     * Plain load of the flags: only for a slot whose publication an acquire load already ordered: a later slot of
     * the same list after its first descriptor's flags, or an earlier head after a later head's flags (the driver
     * publishes heads in ring order).
     */
    public static int flagsPlainLoad(MemorySegment ring, int slot) {
        return Short.toUnsignedInt(ring.get(Le.U16, (long) DESC_SIZE * slot + DESC_FLAGS));
    }

    /** Acquire load: the descriptor's other fields read after it are those written before its flags were stored. */
    public static int flagsAcquire(MemorySegment ring, int slot) {
        return Short.toUnsignedInt((short) Le.U16_VH.getAcquire(ring, (long) DESC_SIZE * slot + DESC_FLAGS));
    }

    /** Release store: the descriptor's other fields (and whatever was written before) are visible no later. */
    public static void flagsRelease(MemorySegment ring, int slot, int flags) {
        Le.setU16Release(ring, (long) DESC_SIZE * slot + DESC_FLAGS, flags);
    }

    /** Plain store of the flags: only for descriptors of a list whose first descriptor is published later. */
    public static void flagsPlain(MemorySegment ring, int slot, int flags) {
        ring.set(Le.U16, (long) DESC_SIZE * slot + DESC_FLAGS, (short) flags);
    }

    public static long indirectAddr(MemorySegment seg, long tableBase, int index) {
        return seg.get(Le.U64_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_ADDR);
    }

    /** Length as an unsigned 32-bit value. */
    public static long indirectLen(MemorySegment seg, long tableBase, int index) {
        return Integer.toUnsignedLong(seg.get(Le.U32_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_LEN));
    }

    public static int indirectFlags(MemorySegment seg, long tableBase, int index) {
        return Short.toUnsignedInt(seg.get(Le.U16_UNALIGNED, tableBase + (long) DESC_SIZE * index + DESC_FLAGS));
    }

    /** Writes entry {@code index} of a packed indirect table: addr, len, flags, and the id (reserved there) as 0. */
    public static void indirectWrite(MemorySegment seg, long tableBase, int index, long addr, int len, int flags) {
        long off = tableBase + (long) DESC_SIZE * index;
        seg.set(Le.U64_UNALIGNED, off + DESC_ADDR, addr);
        seg.set(Le.U32_UNALIGNED, off + DESC_LEN, len);
        seg.set(Le.U16_UNALIGNED, off + DESC_ID, (short) 0);
        seg.set(Le.U16_UNALIGNED, off + DESC_FLAGS, (short) flags);
    }

    /** Writes addr, len and id; the flags are stored separately, since storing them is what publishes. */
    public static void write(MemorySegment ring, int slot, long addr, int len, int id) {
        long off = (long) DESC_SIZE * slot;
        ring.set(Le.U64, off + DESC_ADDR, addr);
        ring.set(Le.U32, off + DESC_LEN, len);
        ring.set(Le.U16, off + DESC_ID, (short) id);
    }

    /** Writes id and len of a used descriptor; its flags are stored separately. */
    public static void writeUsed(MemorySegment ring, int slot, int id, int len) {
        long off = (long) DESC_SIZE * slot;
        ring.set(Le.U32, off + DESC_LEN, len);
        ring.set(Le.U16, off + DESC_ID, (short) id);
    }
}
