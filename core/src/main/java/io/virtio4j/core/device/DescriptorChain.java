package io.virtio4j.core.device;

import io.virtio4j.core.error.ChainTooLongException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;

import java.lang.foreign.MemorySegment;

/**
 * One available buffer as the device sees it: its head index and its elements, readable ones first, each
 * already translated and bounds-checked into guest memory (zero copy).
 *
 * <p>A queue reuses one instance: it is valid until the next {@code pop}. Element {@code i} is
 * {@code length(i)} bytes at {@code offset(i)} of {@code region(i)}; {@link #readable(int)} and
 * {@link #writable(int)} give the same as slices. {@link #gather} and {@link #scatter} treat the readable and
 * writable parts as byte streams, since message framing need not follow descriptor boundaries.
 *
 * <p>Elements are not descriptors: a descriptor whose buffer crosses from one guest memory region into the next
 * one, adjacent in guest-physical space (a front-end's memory table may cut contiguous guest RAM into several
 * regions, each its own mapping here), becomes one element per region, in order. So a chain may have more elements
 * than descriptors, up to twice the queue size ({@link #capacity()}); an indirect table itself must still lie in
 * one region.
 */
public final class DescriptorChain {
    /** The spec bounds a buffer at 2^32 bytes: a longer chain is refused at pop, whatever its format. */
    static final long MAX_BYTES = 1L << 32;
    /** The most a used entry can report written: its length field has 32 bits, in both formats. */
    static final long MAX_WRITTEN = 0xFFFF_FFFFL;
    private final MemorySegment[] region;
    private final long[] offset;
    private final long[] length;
    private int head;
    private int count;
    private int readableCount;
    private long readableBytes;
    private long writableBytes;

    /** {@link #addGuest} added the whole descriptor. */
    static final int ADDED = 0;
    /** {@link #addGuest}: some byte of the descriptor is in no region, or its range wraps 2^64. */
    static final int UNMAPPED = 1;
    /** {@link #addGuest}: the descriptor's pieces do not fit in the {@link #capacity()} left. */
    static final int FULL = 2;

    /**
     * Room for a chain of {@code queueSize} descriptors: twice that many elements, so that every descriptor of a
     * full-length chain may cross one region boundary (a real memory layout has a few boundaries; a chain that
     * crosses more is refused by the queue).
     */
    DescriptorChain(int queueSize) {
        int capacity = 2 * queueSize;
        region = new MemorySegment[capacity];
        offset = new long[capacity];
        length = new long[capacity];
    }

    /** The most elements a chain may have. */
    public int capacity() {
        return region.length;
    }

    void reset(int head) {
        this.head = head;
        count = 0;
        readableCount = 0;
        readableBytes = 0;
        writableBytes = 0;
    }

    /** Sets the id once it is known: a packed buffer's id is in the last descriptor of its list. */
    void setHead(int head) {
        this.head = head;
    }

    void add(MemorySegment seg, long off, long len, boolean writable) {
        // Stored only when it changes: almost always it is the segment already there (guest memory is a few regions,
        // each one segment object), and a reference store into this array, once the array is in G1's old generation
        // and the segment is not in its heap region, runs the card-marking post barrier, a StoreLoad fence included
        // (a locked instruction on x86), on every pop. A load and a compare cost less.
        if (region[count] != seg) {
            region[count] = seg;
        }
        offset[count] = off;
        length[count] = len;
        count++;
        if (writable) {
            writableBytes += len;
        } else {
            readableCount++;
            readableBytes += len;
        }
    }

    /**
     * Adds the descriptor [{@code addr}, +{@code len}) of guest memory, one element per region it lies in. The
     * common case, one region holding it all, is one lookup as before; a descriptor that leaves a region continues
     * in the region starting right where it ends, or is {@link #UNMAPPED}. Allocates nothing. On {@link #UNMAPPED}
     * or {@link #FULL} some pieces may have been added: the caller breaks the queue, and the next pop resets.
     *
     * @param len positive (zero-length elements are refused before)
     * @return {@link #ADDED}, {@link #UNMAPPED} or {@link #FULL}
     */
    int addGuest(GuestMemory memory, long addr, long len, boolean writable) {
        int r = memory.find(addr, len);
        if (r >= 0) {
            if (count == region.length) {
                return FULL;
            }
            add(memory.region(r), memory.offsetIn(r, addr), len, writable);
            return ADDED;
        }
        // Unsigned: the range may end exactly at 2^64 (its last byte is 2^64 - 1) but not wrap past it.
        if (Long.compareUnsigned(addr + len - 1, addr) < 0) {
            return UNMAPPED;
        }
        long at = addr;
        long left = len;
        while (left > 0) {
            int p = memory.find(at, 1);
            if (p < 0) {
                return UNMAPPED;
            }
            if (count == region.length) {
                return FULL;
            }
            long off = memory.offsetIn(p, at);
            long n = Math.min(left, memory.regionSize(p) - off);
            add(memory.region(p), off, n, writable);
            at += n; // cannot wrap before left reaches 0: the range was checked not to
            left -= n;
        }
        return ADDED;
    }

    /**
     * The error a failed {@link #addGuest} breaks the queue with, one wording for both ring formats; built only on
     * failure, so the hot path allocates nothing.
     *
     * @param result {@link #UNMAPPED} or {@link #FULL}, as {@link #addGuest} returned it
     * @param field the descriptor's address field, for the error
     */
    RingViolationException addFailure(int result, GuestMemory memory, long addr, long len, String field) {
        if (result == UNMAPPED) {
            return memory.notCovered(addr, len, field);
        }
        return new ChainTooLongException(field, addr, "split at guest memory region boundaries, the chain has more"
                + " than " + capacity() + " elements");
    }

    /** The id to push back as used: the head descriptor index (split) or the buffer id (packed). */
    public int head() {
        return head;
    }

    public int count() {
        return count;
    }

    public int readableCount() {
        return readableCount;
    }

    public int writableCount() {
        return count - readableCount;
    }

    public long readableBytes() {
        return readableBytes;
    }

    public long writableBytes() {
        return writableBytes;
    }

    public MemorySegment region(int i) {
        check(i);
        return region[i];
    }

    public long offset(int i) {
        check(i);
        return offset[i];
    }

    public long length(int i) {
        check(i);
        return length[i];
    }

    public boolean isWritable(int i) {
        check(i);
        return i >= readableCount;
    }

    /** Readable element {@code i} as a slice of guest memory. */
    public MemorySegment readable(int i) {
        if (i < 0 || i >= readableCount) {
            throw new IndexOutOfBoundsException("readable element " + i + " of " + readableCount);
        }
        return region[i].asSlice(offset[i], length[i]);
    }

    /** Writable element {@code i} as a slice of guest memory. */
    public MemorySegment writable(int i) {
        if (i < 0 || i >= count - readableCount) {
            throw new IndexOutOfBoundsException("writable element " + i + " of " + (count - readableCount));
        }
        int e = readableCount + i;
        return region[e].asSlice(offset[e], length[e]);
    }

    /**
     * Copies up to {@code max} bytes of the readable part, starting {@code skip} bytes into it, to
     * {@code dst} at {@code dstOffset}. Returns the bytes copied.
     */
    public long gather(long skip, MemorySegment dst, long dstOffset, long max) {
        long copied = 0;
        for (int i = 0; i < readableCount && copied < max; i++) {
            long len = length[i];
            if (skip >= len) {
                skip -= len;
                continue;
            }
            long n = Math.min(len - skip, max - copied);
            MemorySegment.copy(region[i], offset[i] + skip, dst, dstOffset + copied, n);
            copied += n;
            skip = 0;
        }
        return copied;
    }

    /**
     * Copies up to {@code len} bytes from {@code src} at {@code srcOffset} into the writable part, starting
     * {@code skip} bytes into it. Returns the bytes copied (less than {@code len} when the part is full).
     */
    public long scatter(long skip, MemorySegment src, long srcOffset, long len) {
        long copied = 0;
        for (int i = readableCount; i < count && copied < len; i++) {
            long elen = length[i];
            if (skip >= elen) {
                skip -= elen;
                continue;
            }
            long n = Math.min(elen - skip, len - copied);
            MemorySegment.copy(src, srcOffset + copied, region[i], offset[i] + skip, n);
            copied += n;
            skip = 0;
        }
        return copied;
    }

    /**
     * Marks the first {@code len} bytes of the writable part in {@code log} (what a device wrote there, e.g. with
     * {@link #scatter}), each element at its guest address in {@code memory}, the memory this chain was popped over.
     *
     * @throws io.virtio4j.core.error.DirtyLogOverflowException when the log has no bit for a page of them; the caller
     *         breaks the queue ({@link DeviceQueue#fail})
     */
    public void markWritten(DirtyLog log, GuestMemory memory, long len) {
        long left = len;
        for (int i = readableCount; i < count && left > 0; i++) {
            long n = Math.min(length[i], left);
            log.markHost(memory, region[i], offset[i], n);
            left -= n;
        }
    }

    private void check(int i) {
        if (i < 0 || i >= count) {
            throw new IndexOutOfBoundsException("element " + i + " of " + count);
        }
    }
}
