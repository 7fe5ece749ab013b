package io.virtio4j.core.device;

import io.virtio4j.core.error.InvalidInflightRegionException;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

import static io.virtio4j.core.layout.InflightLayout.PACKED_DESC_NUM;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_ADDR;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_FLAGS;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_ID;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_INFLIGHT;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_LAST;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_LEN;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_NEXT;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_NUM;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_SIZE;
import static io.virtio4j.core.layout.InflightLayout.PACKED_FEATURES;
import static io.virtio4j.core.layout.InflightLayout.PACKED_FREE_HEAD;
import static io.virtio4j.core.layout.InflightLayout.PACKED_HEADER_SIZE;
import static io.virtio4j.core.layout.InflightLayout.PACKED_OLD_FREE_HEAD;
import static io.virtio4j.core.layout.InflightLayout.PACKED_OLD_USED_IDX;
import static io.virtio4j.core.layout.InflightLayout.PACKED_OLD_USED_WRAP_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.PACKED_USED_IDX;
import static io.virtio4j.core.layout.InflightLayout.PACKED_USED_WRAP_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.PACKED_VERSION;

/**
 * A packed queue's inflight region ({@link InflightLayout}, DPDK's layout): what {@link PackedDeviceQueue} records
 * in it, and how a region left by a predecessor is checked and recovered. Owned by the queue's thread.
 *
 * <p><b>Why copies.</b> A packed ring has no separate available ring: the device writes used descriptors over the
 * slots buffers were taken from, in completion order, so after a crash the slots of a buffer still in flight may
 * hold used descriptors of others. Each fetched buffer's descriptors (addr, len, flags, id) are therefore copied
 * into entries taken from a free list of the region's entries, as DPDK does: the buffer's first entry (its head
 * entry) holds the count ({@code num}, which is also the ring slots the buffer took), its {@code last} entry, its
 * fetch {@code counter} and the {@code inflight} flag; the entries stay linked through {@code next} while taken. A
 * resubmitted buffer is rebuilt from these copies and walked with every check a ring pop makes.
 *
 * <p><b>Fields, as this back-end uses them.</b> {@code old_free_head}: the free list. {@code free_head}: the used
 * batch in progress (buffers pushed since the last publication, newest first: each one's last entry links to the one
 * pushed before it; the list is as long as the batch's slots, and its tail link is stale). {@code used_idx}/
 * {@code used_wrap_counter}: the used position after the batch; {@code old_used_idx}/{@code old_used_wrap_counter}:
 * the used position last published, the committed one. The four positions are stored together in one aligned
 * 8-byte store, so a crash never leaves an index without its wrap counter.
 *
 * <p><b>Commit or roll back.</b> The back-end may die between publishing a batch in the ring (the release store of
 * its first used descriptor's flags, in the slot of the committed used position) and committing it here. Recovery
 * then looks at that slot: while the batch is unpublished it still holds the available pattern of the committed
 * wrap counter (the flags of a held used descriptor are stored last); once published its USED bit equals that wrap
 * counter, and it keeps it even after the driver has reaped the descriptor and made the slot available again for
 * the next lap. Published: the batch's buffers are done and their flags cleared; not published: the batch is
 * forgotten and its buffers are resubmitted with the others in flight.
 *
 * <p><b>Ordering.</b> As for {@link SplitInflight}: the reader is a later process after this one died, so only the
 * order in which the JIT emits the stores matters, and each store recovery relies on coming after others is a
 * release store: a head entry is marked in flight after its copies, count and counter; the free list moves past it
 * after that; at publication the flags are cleared after the ring's release store, then the batch joins the free
 * list, then the committed position moves. Pushes are plain stores, ordered by the publication's release store.
 *
 * <p><b>Hostile region.</b> Recovery checks every field it uses, with each entry owned by at most one buffer, before
 * writing anything, and then rebuilds the free list from the entries no buffer in flight owns (so an entry leaked
 * by a crash between two stores comes back). The hot path reads nothing from the region: the links it follows are
 * a private mirror.
 */
final class PackedInflight {
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle U8_VH = ValueLayout.JAVA_BYTE.varHandle();
    private static final VarHandle U16_VH = U16.varHandle();
    private static final VarHandle U64_VH = U64.varHandle();
    /** The positions word: used_idx, old_used_idx, used_wrap_counter, old_used_wrap_counter, 2 bytes padding. */
    private static final long POSITIONS = PACKED_USED_IDX;

    private final MemorySegment region;
    private final int size;
    /** Mirror of every entry's next link: the hot path follows these, never the region's. */
    private final int[] next;
    /** The free list's first entry, {@code size} when empty, and its length. */
    private int freeTop;
    private int freeCount;
    /** Per head entry: its last entry and its entry count (= ring slots). */
    private final int[] headLast;
    private final int[] headNum;
    /** Per buffer id in flight: its head entry. */
    private final int[] idHead;
    /** Per buffer id: resubmitted from the region and not yet pushed. */
    private final boolean[] resubmittedId;
    private long counter;

    /** The batch: head entries pushed since the last publication, oldest first; the newest is the region's free_head. */
    private final int[] batch;
    private int batchLength;
    private int batchHead;
    private int usedIdx;
    private boolean usedWrap;
    private int oldUsedIdx;
    private boolean oldUsedWrap;

    /** Head entries recovered in flight, in counter order; the next to resubmit is {@code resubmitted[resubmitNext]}. */
    private final int[] resubmitted;
    private int resubmitCount;
    private int resubmitNext;
    /** Scratch ring the next resubmitted buffer's copies are laid out in, and the entry each slot came from. */
    private final MemorySegment scratch;
    private final int[] scratchEntry;

    private PackedInflight(MemorySegment region, int size) {
        this.region = region;
        this.size = size;
        this.next = new int[size];
        this.headLast = new int[size];
        this.headNum = new int[size];
        this.idHead = new int[size];
        this.resubmittedId = new boolean[size];
        this.batch = new int[size];
        this.resubmitted = new int[size];
        this.scratch = MemorySegment.ofArray(new long[2 * size]);
        this.scratchEntry = new int[size];
    }

    private static long entry(int e) {
        return PACKED_HEADER_SIZE + (long) e * PACKED_ENTRY_SIZE;
    }

    private int u16(long offset) {
        return Short.toUnsignedInt(region.get(U16, offset));
    }

    private int u8(long offset) {
        return Byte.toUnsignedInt(region.get(ValueLayout.JAVA_BYTE, offset));
    }

    /**
     * Checks and recovers {@code region} for a queue of {@code size} over descriptor ring {@code ring}. A fresh
     * region (version 0) is initialised at used position {@code freshUsed}/{@code freshWrap}.
     *
     * @throws InvalidInflightRegionException naming the first field no back-end could have written
     */
    static PackedInflight recover(MemorySegment region, int size, MemorySegment ring, int freshUsed,
                                  boolean freshWrap) {
        InflightRegions.checkSize(region, RingFormat.PACKED, size);
        PackedInflight t = new PackedInflight(region, size);
        int version = t.u16(PACKED_VERSION);
        if (version == 0) {
            t.initialise(freshUsed, freshWrap);
            return t;
        }
        if (version != InflightLayout.VERSION) {
            throw new InvalidInflightRegionException("inflight.version", version,
                    "is neither 0 (fresh) nor " + InflightLayout.VERSION);
        }
        t.recoverUsed(ring);
        return t;
    }

    private void initialise(int used, boolean wrap) {
        region.fill((byte) 0);
        region.set(U16, PACKED_DESC_NUM, (short) size);
        for (int i = 0; i < size; i++) {
            next[i] = i + 1;
            region.set(U16, entry(i) + PACKED_ENTRY_NEXT, (short) (i + 1));
        }
        freeTop = 0;
        freeCount = size;
        usedIdx = oldUsedIdx = used;
        usedWrap = oldUsedWrap = wrap;
        batchHead = 0;
        storePositions();
        // Last, with release: a crash half-way leaves a region that is still fresh.
        U16_VH.setRelease(region, (long) PACKED_VERSION, (short) InflightLayout.VERSION);
    }

    private long positions() {
        return (usedIdx & 0xFFFFL) | (oldUsedIdx & 0xFFFFL) << 16 | (usedWrap ? 1L : 0) << 32
                | (oldUsedWrap ? 1L : 0) << 40;
    }

    /** The four positions in one release store: never an index without its wrap counter. */
    private void storePositions() {
        U64_VH.setRelease(region, POSITIONS, positions());
    }

    private void recoverUsed(MemorySegment ring) {
        long features = region.get(U64, PACKED_FEATURES);
        if (features != 0) {
            throw new InvalidInflightRegionException("inflight.features", features, "no feature is defined: must be 0");
        }
        int descNum = u16(PACKED_DESC_NUM);
        if (descNum != size) {
            throw new InvalidInflightRegionException("inflight.desc_num", descNum, "is not the queue size " + size);
        }
        int regionBatchHead = u16(PACKED_FREE_HEAD);
        if (regionBatchHead >= size) {
            throw new InvalidInflightRegionException("inflight.free_head", regionBatchHead,
                    "is not below the queue size " + size);
        }
        int freeHead = u16(PACKED_OLD_FREE_HEAD);
        if (freeHead > size) {
            throw new InvalidInflightRegionException("inflight.old_free_head", freeHead,
                    "is neither below the queue size " + size + " nor " + size + " (empty)");
        }
        int used = u16(PACKED_USED_IDX);
        int oldUsed = u16(PACKED_OLD_USED_IDX);
        int wrap = u8(PACKED_USED_WRAP_COUNTER);
        int oldWrap = u8(PACKED_OLD_USED_WRAP_COUNTER);
        if (used >= size) {
            throw new InvalidInflightRegionException("inflight.used_idx", used, "is not below the queue size " + size);
        }
        if (oldUsed >= size) {
            throw new InvalidInflightRegionException("inflight.old_used_idx", oldUsed,
                    "is not below the queue size " + size);
        }
        if (wrap > 1) {
            throw new InvalidInflightRegionException("inflight.used_wrap_counter", wrap, "is neither 0 nor 1");
        }
        if (oldWrap > 1) {
            throw new InvalidInflightRegionException("inflight.old_used_wrap_counter", oldWrap, "is neither 0 nor 1");
        }
        // The free list: in range and without a loop (it is rebuilt below, but a forged one is refused).
        int h = freeHead;
        for (int steps = 0; h != size; steps++) {
            if (steps == size) {
                throw new InvalidInflightRegionException("inflight.desc[" + h + "].next", u16(entry(h) + PACKED_ENTRY_NEXT),
                        "the free list runs past " + size + " entries: a loop");
            }
            int n = u16(entry(h) + PACKED_ENTRY_NEXT);
            if (n > size) {
                throw new InvalidInflightRegionException("inflight.desc[" + h + "].next", n,
                        "a free-list link is neither below the queue size " + size + " nor " + size + " (end)");
            }
            h = n;
        }
        // owner[e]: the head entry of the buffer entry e belongs to, or -1.
        int[] owner = new int[size];
        Arrays.fill(owner, -1);
        boolean[] committed = new boolean[size];
        int lineOld = oldUsed + (oldWrap == 1 ? 0 : size);
        int lineNew = used + (wrap == 1 ? 0 : size);
        int batchSlots = lineNew - lineOld;
        if (batchSlots < 0) {
            batchSlots += 2 * size;
        }
        boolean commit = false;
        if (batchSlots > size) {
            throw new InvalidInflightRegionException("inflight.used_idx", used, "with wrap counter " + wrap + " is "
                    + batchSlots + " slots past the committed " + oldUsed + " (wrap " + oldWrap
                    + "): a batch longer than the queue size " + size);
        }
        if (batchSlots > 0) {
            int flags = PackedDescriptors.flagsPlainLoad(ring, oldUsed);
            commit = !PackedLayout.isAvailable(flags, oldWrap == 1);
        }
        if (commit) {
            int head = regionBatchHead;
            int slots = 0;
            while (true) {
                int last = claim(head, batchSlots - slots, owner);
                committed[head] = true;
                slots += headNum[head];
                if (slots == batchSlots) {
                    break;
                }
                int n = u16(entry(last) + PACKED_ENTRY_NEXT);
                if (n >= size) {
                    throw new InvalidInflightRegionException("inflight.desc[" + last + "].next", n,
                            "a used-batch link is not below the queue size " + size);
                }
                head = n;
            }
            oldUsed = used;
            oldWrap = wrap;
        }
        int n = 0;
        long highest = -1;
        long[] counters = new long[size];
        for (int i = 0; i < size; i++) {
            int flag = u8(entry(i) + PACKED_ENTRY_INFLIGHT);
            if (flag > 1) {
                throw new InvalidInflightRegionException("inflight.desc[" + i + "].inflight", flag, "is neither 0 nor 1");
            }
            if (flag == 0 || committed[i]) {
                continue;
            }
            long c = region.get(U64, entry(i) + PACKED_ENTRY_COUNTER);
            if (c < 0) {
                throw new InvalidInflightRegionException("inflight.desc[" + i + "].counter", c,
                        "is 2^63 or more (as unsigned)");
            }
            claim(i, size, owner);
            counters[i] = c;
            highest = Math.max(highest, c);
            resubmitted[n++] = i;
        }
        InflightRegions.sortByCounter(resubmitted, n, counters);
        // Every check passed: the writes. The committed batch's flags first, then the positions (a crash after them
        // leaves no batch to walk, whose links the free list below rewrites), then the free list, emptied while its
        // links are rewritten so that a crash half-way leaves no loop. A crash anywhere here leaves a region the
        // next recovery accepts and settles the same way.
        for (int i = 0; i < size; i++) {
            if (committed[i]) {
                U8_VH.setRelease(region, entry(i) + PACKED_ENTRY_INFLIGHT, (byte) 0);
            }
        }
        usedIdx = oldUsedIdx = oldUsed;
        usedWrap = oldUsedWrap = oldWrap == 1;
        storePositions();
        U16_VH.setRelease(region, (long) PACKED_OLD_FREE_HEAD, (short) size);
        freeTop = size;
        freeCount = 0;
        for (int i = size - 1; i >= 0; i--) {
            if (owner[i] < 0 || committed[owner[i]]) {
                next[i] = freeTop;
                region.set(U16, entry(i) + PACKED_ENTRY_NEXT, (short) freeTop);
                freeTop = i;
                freeCount++;
            }
        }
        U16_VH.setRelease(region, (long) PACKED_OLD_FREE_HEAD, (short) freeTop);
        region.set(U16, PACKED_FREE_HEAD, (short) (freeTop == size ? 0 : freeTop));
        batchHead = freeTop == size ? 0 : freeTop;
        counter = highest + 1;
        resubmitCount = n;
    }

    /**
     * Checks the buffer whose head entry is {@code head}: its count at most {@code most}, its links in range and to
     * entries no other buffer owns, its last entry the one named; marks its entries owned, mirrors its links and
     * returns its last entry.
     */
    private int claim(int head, int most, int[] owner) {
        if (owner[head] >= 0) {
            throw new InvalidInflightRegionException("inflight.desc[" + head + "].inflight", 1,
                    "a head entry that belongs to the buffer of entry " + owner[head]);
        }
        int num = u16(entry(head) + PACKED_ENTRY_NUM);
        if (num == 0 || num > most) {
            throw new InvalidInflightRegionException("inflight.desc[" + head + "].num", num,
                    "is not in [1, " + most + "]");
        }
        int e = head;
        owner[e] = head;
        for (int k = 1; k < num; k++) {
            int n = u16(entry(e) + PACKED_ENTRY_NEXT);
            if (n >= size) {
                throw new InvalidInflightRegionException("inflight.desc[" + e + "].next", n,
                        "is not below the queue size " + size);
            }
            if (owner[n] >= 0) {
                throw new InvalidInflightRegionException("inflight.desc[" + e + "].next", n,
                        "links to an entry of the buffer of entry " + owner[n] + " (a loop or an overlap)");
            }
            next[e] = n;
            e = n;
            owner[e] = head;
        }
        int last = u16(entry(head) + PACKED_ENTRY_LAST);
        if (last != e) {
            throw new InvalidInflightRegionException("inflight.desc[" + head + "].last", last,
                    "is not the buffer's last entry " + e);
        }
        headLast[head] = e;
        headNum[head] = num;
        return e;
    }

    int resubmitCount() {
        return resubmitCount;
    }

    /** The used position recovery settled on (committed), where the queue resumes. */
    int usedIdx() {
        return oldUsedIdx;
    }

    boolean usedWrap() {
        return oldUsedWrap;
    }

    /** Ring slots the resubmitted buffers took: the available position is that many past the used one. */
    int resubmittedSlots() {
        int s = 0;
        for (int k = 0; k < resubmitCount; k++) {
            s += headNum[resubmitted[k]];
        }
        return s;
    }

    // ---- resubmission ----

    /**
     * Lays the next resubmitted buffer's copies out in a scratch ring, slot 0 on, every flags word marked available
     * for wrap counter 1 (the copies' own AVAIL/USED bits are of the lap they were fetched in), and returns the
     * scratch; {@link #scratchEntry(int)} maps a slot back to its entry for error messages. The copies are read once:
     * the front-end may write the region meanwhile, and the queue walks what was read, with every check of a pop.
     */
    MemorySegment nextResubmitted() {
        int head = resubmitted[resubmitNext];
        int num = headNum[head];
        int e = head;
        for (int k = 0; k < num; k++) {
            long off = entry(e);
            int flags = u16(off + PACKED_ENTRY_FLAGS);
            boolean more = (flags & PackedLayout.DESC_F_NEXT) != 0;
            if (more != (k < num - 1)) {
                throw new InvalidInflightRegionException("inflight.desc[" + e + "].flags", flags, more
                        ? "NEXT set on the last of the buffer's " + num + " descriptors"
                        : "NEXT clear on descriptor " + (k + 1) + " of the buffer's " + num);
            }
            flags = flags & ~(PackedLayout.DESC_F_AVAIL | PackedLayout.DESC_F_USED) | PackedLayout.availBits(true);
            PackedDescriptors.write(scratch, k, region.get(U64, off + PACKED_ENTRY_ADDR),
                    region.get(U32, off + PACKED_ENTRY_LEN), u16(off + PACKED_ENTRY_ID));
            PackedDescriptors.flagsPlain(scratch, k, flags);
            scratchEntry[k] = e;
            e = next[e];
        }
        if (num < size) {
            PackedDescriptors.flagsPlain(scratch, num, 0); // not available: a walk cannot run past the copies
        }
        return scratch;
    }

    int scratchEntry(int slot) {
        return scratchEntry[slot];
    }

    /** The buffer laid out by {@link #nextResubmitted} was walked and is id {@code id}'s: popped. */
    void resubmittedPopped(int id) {
        int head = resubmitted[resubmitNext++];
        idHead[id] = head;
        resubmittedId[id] = true;
    }

    int resubmittedSlots(int id) {
        return headNum[idHead[id]];
    }

    boolean isResubmitted(int id) {
        return resubmittedId[id];
    }

    /** A resubmitted buffer given back (unpop): the next resubmission is it again. */
    void resubmittedUnpopped(int id) {
        resubmittedId[id] = false;
        resubmitNext--;
    }

    // ---- hot path ----

    /**
     * A buffer of {@code slots} descriptors fetched from {@code ring} at {@code slot}: copies them into entries from
     * the free list, then its count, last entry and counter, then (release) its in-flight flag, then (release) the
     * free list past it. Returns false, writing nothing, when the free list has fewer entries than that: only a
     * driver that reused slots it had not seen used can get there.
     */
    boolean fetched(int id, MemorySegment ring, int slot, int slots) {
        if (freeCount < slots) {
            return false;
        }
        int head = freeTop;
        int e = head;
        int last = head;
        int s = slot;
        for (int k = 0; k < slots; k++) {
            long off = entry(e);
            region.set(U64, off + PACKED_ENTRY_ADDR, PackedDescriptors.addr(ring, s));
            region.set(U32, off + PACKED_ENTRY_LEN, (int) PackedDescriptors.len(ring, s));
            region.set(U16, off + PACKED_ENTRY_ID, (short) PackedDescriptors.id(ring, s));
            region.set(U16, off + PACKED_ENTRY_FLAGS, (short) PackedDescriptors.flagsPlainLoad(ring, s));
            last = e;
            e = next[e];
            if (++s == size) {
                s = 0;
            }
        }
        long h = entry(head);
        region.set(U16, h + PACKED_ENTRY_NUM, (short) slots);
        region.set(U16, h + PACKED_ENTRY_LAST, (short) last);
        region.set(U64, h + PACKED_ENTRY_COUNTER, counter++);
        U8_VH.setRelease(region, h + PACKED_ENTRY_INFLIGHT, (byte) 1);
        freeTop = e;
        freeCount -= slots;
        U16_VH.setRelease(region, (long) PACKED_OLD_FREE_HEAD, (short) freeTop);
        headLast[head] = last;
        headNum[head] = slots;
        idHead[id] = head;
        return true;
    }

    /** A buffer fetched from the ring and given back (unpop): its entries return to the free list. */
    void unfetched(int id) {
        int head = idHead[id];
        U8_VH.setRelease(region, entry(head) + PACKED_ENTRY_INFLIGHT, (byte) 0);
        release(head);
        U16_VH.setRelease(region, (long) PACKED_OLD_FREE_HEAD, (short) freeTop);
    }

    /** Links the buffer of {@code head} in front of the free list (mirror and region; the head store is the caller's). */
    private void release(int head) {
        int last = headLast[head];
        next[last] = freeTop;
        region.set(U16, entry(last) + PACKED_ENTRY_NEXT, (short) freeTop);
        freeTop = head;
        freeCount += headNum[head];
    }

    /**
     * Buffer {@code id} pushed as used: joins the batch (its last entry links to the batch's previous newest, it
     * becomes free_head) and the used position after the batch moves by its slots. Plain stores: the publication's
     * release store orders them.
     */
    void pushed(int id) {
        int head = idHead[id];
        int last = headLast[head];
        next[last] = batchHead;
        region.set(U16, entry(last) + PACKED_ENTRY_NEXT, (short) batchHead);
        batchHead = head;
        region.set(U16, PACKED_FREE_HEAD, (short) head);
        batch[batchLength++] = head;
        usedIdx += headNum[head];
        if (usedIdx >= size) {
            usedIdx -= size;
            usedWrap = !usedWrap;
        }
        U64_VH.set(region, POSITIONS, positions());
        resubmittedId[id] = false;
    }

    /**
     * The batch is published in the ring (release store just before): its flags are cleared, it joins the free list
     * (the oldest buffer's last entry links to the free list, whose top becomes the newest), then the committed used
     * position moves to the batch's end. Release stores, each after the ones before.
     */
    void published() {
        if (batchLength == 0) {
            return;
        }
        for (int k = 0; k < batchLength; k++) {
            U8_VH.setRelease(region, entry(batch[k]) + PACKED_ENTRY_INFLIGHT, (byte) 0);
        }
        int oldestLast = headLast[batch[0]];
        next[oldestLast] = freeTop;
        region.set(U16, entry(oldestLast) + PACKED_ENTRY_NEXT, (short) freeTop);
        for (int k = 0; k < batchLength; k++) {
            freeCount += headNum[batch[k]];
        }
        freeTop = batchHead;
        batchLength = 0;
        U16_VH.setRelease(region, (long) PACKED_OLD_FREE_HEAD, (short) freeTop);
        oldUsedIdx = usedIdx;
        oldUsedWrap = usedWrap;
        storePositions();
    }
}
