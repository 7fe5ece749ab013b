package io.virtio4j.core.device;

import io.virtio4j.core.error.InvalidInflightRegionException;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

import static io.virtio4j.core.layout.InflightLayout.SPLIT_DESC_NUM;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_ENTRY_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_ENTRY_INFLIGHT;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_ENTRY_NEXT;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_ENTRY_SIZE;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_FEATURES;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_HEADER_SIZE;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_LAST_BATCH_HEAD;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_USED_IDX;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_VERSION;

/**
 * A split queue's inflight region ({@link InflightLayout}, DPDK's and libvhost-user's layout): what
 * {@link SplitDeviceQueue} records in it on the hot path, and how a region left by a predecessor is checked and
 * recovered. Owned by the queue's thread.
 *
 * <p><b>Ordering.</b> The only reader of what is written here is a later back-end process, after this one died
 * (kill -9 included): the kernel keeps a dead process's stores (they sit in shared memory, the store buffer drains
 * whatever happens to the process), so CPU reordering cannot show; what can is the order in which the JIT emits the
 * stores. Every store recovery relies on coming after another is therefore a release store (a plain move on x86 and
 * a store-store barrier on weaker CPUs), which keeps every earlier load and store before it: a head is marked in
 * flight only after its counter, a batch's flags are cleared only after the ring's used.idx, and the region's
 * used_idx only after those flags. The links of a batch are plain stores: the release store of used.idx, which the
 * queue makes after them, orders them.
 *
 * <p><b>Hostile region.</b> The front-end can write every byte of the region, before a restart and while the queue
 * runs. Recovery checks every field it uses before it writes anything, and the hot path reads nothing from the
 * region (the batch it clears is kept in a private array), so a region scribbled on while the queue runs can only
 * change what a later recovery finds, and that recovery checks it again. Every access is through the bounded
 * segment, after an index check.
 */
final class SplitInflight {
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle U8_VH = ValueLayout.JAVA_BYTE.varHandle();
    private static final VarHandle U16_VH = U16.varHandle();

    private final MemorySegment region;
    private final int size;
    /** The counter the next fetched head gets. */
    private long counter;
    /** The heads pushed since the last publication, in push order: the batch publishUsed clears. */
    private final int[] batch;
    private int batchLength;
    /** The region's last_batch_head as this side last wrote it (the hot path never reads the region back). */
    private int lastBatchHead;
    /** Per head: resubmitted from the region and not yet pushed (an unpop of it goes back to the resubmit list). */
    private final boolean[] resubmitted;

    private SplitInflight(MemorySegment region, int size) {
        this.region = region;
        this.size = size;
        this.batch = new int[size];
        this.resubmitted = new boolean[size];
    }

    /**
     * Checks and recovers {@code region} for a queue of {@code size} whose ring holds used index {@code usedIdx}:
     * a fresh region (version 0) is initialised, a region left by a back-end has its published-but-uncleared batch
     * cleared, and the heads still in flight are written to {@code heads} in counter order (index order among equal
     * counters). Nothing is written to the region unless every check passed.
     *
     * @return the tracker, its {@link #resubmitCount()} the number of heads written to {@code heads}
     * @throws InvalidInflightRegionException naming the first field that no back-end could have written
     */
    static SplitInflight recover(MemorySegment region, int size, int usedIdx, int[] heads) {
        InflightRegions.checkSize(region, RingFormat.SPLIT, size);
        SplitInflight t = new SplitInflight(region, size);
        int version = Short.toUnsignedInt(region.get(U16, SPLIT_VERSION));
        if (version == 0) {
            t.initialise(usedIdx);
            return t;
        }
        if (version != InflightLayout.VERSION) {
            throw new InvalidInflightRegionException("inflight.version", version,
                    "is neither 0 (fresh) nor " + InflightLayout.VERSION);
        }
        long features = region.get(U64, SPLIT_FEATURES);
        if (features != 0) {
            throw new InvalidInflightRegionException("inflight.features", features, "no feature is defined: must be 0");
        }
        int descNum = Short.toUnsignedInt(region.get(U16, SPLIT_DESC_NUM));
        if (descNum != size) {
            throw new InvalidInflightRegionException("inflight.desc_num", descNum, "is not the queue size " + size);
        }
        int lastBatchHead = Short.toUnsignedInt(region.get(U16, SPLIT_LAST_BATCH_HEAD));
        if (lastBatchHead >= size) {
            throw new InvalidInflightRegionException("inflight.last_batch_head", lastBatchHead,
                    "is not below the queue size " + size);
        }
        int regionUsed = Short.toUnsignedInt(region.get(U16, SPLIT_USED_IDX));
        int batchSize = (usedIdx - regionUsed) & 0xFFFF;
        if (batchSize > size) {
            throw new InvalidInflightRegionException("inflight.used_idx", regionUsed, "is " + batchSize
                    + " entries behind the ring's used.idx " + usedIdx + ": a batch longer than the queue size " + size);
        }
        // The last batch: published (used.idx moved past the region's used_idx) but maybe not cleared yet.
        boolean[] inBatch = new boolean[size];
        int h = lastBatchHead;
        for (int k = 0; k < batchSize; k++) {
            inBatch[h] = true;
            if (k == batchSize - 1) {
                break;
            }
            int next = Short.toUnsignedInt(region.get(U16, entry(h) + SPLIT_ENTRY_NEXT));
            if (next >= size) {
                throw new InvalidInflightRegionException("inflight.desc[" + h + "].next", next,
                        "is not below the queue size " + size);
            }
            if (inBatch[next]) {
                throw new InvalidInflightRegionException("inflight.desc[" + h + "].next", next,
                        "links back into the last batch (a loop) after " + (k + 1) + " of its " + batchSize + " heads");
            }
            h = next;
        }
        int n = 0;
        long[] counters = new long[size];
        long highest = -1;
        for (int i = 0; i < size; i++) {
            int flag = Byte.toUnsignedInt(region.get(ValueLayout.JAVA_BYTE, entry(i) + SPLIT_ENTRY_INFLIGHT));
            if (flag > 1) {
                throw new InvalidInflightRegionException("inflight.desc[" + i + "].inflight", flag, "is neither 0 nor 1");
            }
            if (flag == 1 && !inBatch[i]) {
                long c = region.get(U64, entry(i) + SPLIT_ENTRY_COUNTER);
                if (c < 0) {
                    // A counter at 2^63 or more: no back-end counts that far, and continuing after it would wrap.
                    throw new InvalidInflightRegionException("inflight.desc[" + i + "].counter", c,
                            "is 2^63 or more (as unsigned)");
                }
                counters[i] = c;
                highest = Math.max(highest, c);
                heads[n++] = i;
            }
        }
        InflightRegions.sortByCounter(heads, n, counters);
        // Every check passed: now the writes. The batch's flags first, then used_idx (release, see the class
        // comment): a crash in between leaves used_idx behind, and the next recovery clears the same batch again.
        for (int i = 0; i < size; i++) {
            if (inBatch[i]) {
                U8_VH.setRelease(region, entry(i) + SPLIT_ENTRY_INFLIGHT, (byte) 0);
            }
        }
        U16_VH.setRelease(region, (long) SPLIT_USED_IDX, (short) usedIdx);
        for (int k = 0; k < n; k++) {
            t.resubmitted[heads[k]] = true;
        }
        t.counter = highest + 1;
        t.lastBatchHead = lastBatchHead;
        t.resubmitCount = n;
        return t;
    }

    private int resubmitCount;

    /** Heads recovery found in flight: written to the array given to {@link #recover}. */
    int resubmitCount() {
        return resubmitCount;
    }

    /**
     * A fresh region, or one the front-end reset: whatever it holds is not ours (SPDK trusted a fresh region's
     * last_io and resubmitted garbage), so all of it is zeroed; the version goes last, with release, so a crash
     * half-way leaves a region that is still fresh.
     */
    private void initialise(int usedIdx) {
        region.fill((byte) 0);
        region.set(U16, SPLIT_DESC_NUM, (short) size);
        region.set(U16, SPLIT_USED_IDX, (short) usedIdx);
        U16_VH.setRelease(region, (long) SPLIT_VERSION, (short) InflightLayout.VERSION);
    }

    private static long entry(int head) {
        return SPLIT_HEADER_SIZE + (long) head * SPLIT_ENTRY_SIZE;
    }

    /** A head fetched from the avail ring: its counter, then (release) its in-flight flag. */
    void fetched(int head) {
        long e = entry(head);
        region.set(U64, e + SPLIT_ENTRY_COUNTER, counter++);
        U8_VH.setRelease(region, e + SPLIT_ENTRY_INFLIGHT, (byte) 1);
    }

    /** Whether {@code head} was resubmitted from the region and is not yet pushed. */
    boolean isResubmitted(int head) {
        return resubmitted[head];
    }

    /** A head fetched from the avail ring and given back (unpop): no longer the device's. */
    void unfetched(int head) {
        U8_VH.setRelease(region, entry(head) + SPLIT_ENTRY_INFLIGHT, (byte) 0);
    }

    /**
     * A head pushed as used: linked into the batch list (its next is the previous batch head, then it becomes the
     * batch head). Plain stores: the release store of used.idx that publishes the batch orders them.
     */
    void pushed(int head) {
        long e = entry(head);
        region.set(U16, e + SPLIT_ENTRY_NEXT, (short) lastBatchHead);
        region.set(U16, SPLIT_LAST_BATCH_HEAD, (short) head);
        lastBatchHead = head;
        batch[batchLength++] = head;
        resubmitted[head] = false;
    }

    /**
     * The batch is published (used.idx stored with release just before): its heads' flags are cleared, then the
     * region's used_idx follows the ring's. Release stores, so neither moves before the used.idx store nor before
     * the other.
     */
    void published(int usedIdx) {
        for (int k = 0; k < batchLength; k++) {
            U8_VH.setRelease(region, entry(batch[k]) + SPLIT_ENTRY_INFLIGHT, (byte) 0);
        }
        batchLength = 0;
        U16_VH.setRelease(region, (long) SPLIT_USED_IDX, (short) usedIdx);
    }
}
