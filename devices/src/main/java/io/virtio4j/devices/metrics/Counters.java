package io.virtio4j.devices.metrics;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

/**
 * A fixed number of monotonic counters with one writer: the queue thread that owns them adds, any other thread (the
 * statistics printer, the metrics scraper, the control thread summing across connections) reads at any time.
 *
 * <p>Why opaque and nothing stronger. Each counter is one value with one writer, and a reader wants that value whole
 * and never going backwards; it never needs two counters consistent with each other, nor anything else the writer did
 * before. An opaque store and load give exactly that: the 64-bit value is never torn (a plain long may be, JLS 17.7),
 * a reader never sees a counter go back (coherence), and a store becomes visible without a fence. So the writer pays
 * a plain {@code mov} on x86 and a plain store on ARM: no read-modify-write (the writer is alone, so its own plain
 * read of the slot is its last store), no lock, no StoreLoad fence as a volatile store would take. Readers never
 * block the writer; a scrape that runs while a pass folds its counts sees some of that pass and the rest at the next.
 * Plain accesses would behave the same on a 64-bit HotSpot today (its longs are not torn, and no test here can tell
 * them apart), but the language promises neither whole 64-bit values nor that a plain read in a reader's loop is not
 * hoisted out of it, nor that plain stores are not merged or delayed; opaque is the weakest mode that promises those,
 * and costs the writer nothing more.
 *
 * <p>The slots sit in the middle of a padded array: counters of two queue threads, made one after the other on the
 * control thread, would otherwise be neighbours on the heap, and each thread's stores would take the other's cache
 * line away (false sharing). Two cache lines on each side also cover the adjacent-line prefetcher.
 */
public final class Counters {
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);
    /** Longs of padding before and after the counters: 128 bytes each side. */
    private static final int PAD = 16;

    private final long[] slots;
    private final int size;

    /** {@code size} counters, all zero. */
    public Counters(int size) {
        if (size < 0) {
            throw new IllegalArgumentException("size " + size + " is negative");
        }
        this.size = size;
        this.slots = new long[PAD + size + PAD];
    }

    public int size() {
        return size;
    }

    /** Adds {@code delta} to counter {@code i}. Only the owning thread calls this. */
    public void add(int i, long delta) {
        int k = PAD + Objects.checkIndex(i, size);
        SLOT.setOpaque(slots, k, slots[k] + delta);
    }

    /** Counter {@code i} now, from any thread. */
    public long get(int i) {
        return (long) SLOT.getOpaque(slots, PAD + Objects.checkIndex(i, size));
    }

    /**
     * Adds every counter of {@code other} (same size) to this one's: for a sum made on the calling thread (which then
     * owns this object), e.g. statistics added up across connections.
     */
    public void addAll(Counters other) {
        if (other.size != size) {
            throw new IllegalArgumentException("counters of size " + other.size + " added to counters of size " + size);
        }
        for (int i = 0; i < size; i++) {
            add(i, other.get(i));
        }
    }
}
