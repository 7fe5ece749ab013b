package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A native array of {@code struct iovec} ({@code void *iov_base; size_t iov_len;}, 16 bytes each): what
 * {@code preadv}/{@code pwritev} and io_uring's READV/WRITEV take. A flyweight: one is allocated per request slot
 * up front and refilled for every request, so filling it allocates nothing.
 *
 * <p>An entry holds a raw address: the memory it points at must stay mapped until the kernel is done with the
 * operation (for io_uring, until its completion is reaped). Whoever fills it owns that guarantee.
 */
public final class IoVecs {
    /** Bytes of one {@code struct iovec} on LP64 Linux. */
    public static final long ENTRY_BYTES = 16;
    /** Linux's UIO_MAXIOV: the most entries one vectored call takes. */
    public static final int MAX_ENTRIES = 1024;

    private final MemorySegment array;
    private final int capacity;

    private IoVecs(MemorySegment array, int capacity) {
        this.array = array;
        this.capacity = capacity;
    }

    /** An array of {@code capacity} entries (1 to {@link #MAX_ENTRIES}) in {@code arena}. */
    public static IoVecs allocate(Arena arena, int capacity) {
        if (capacity < 1 || capacity > MAX_ENTRIES) {
            throw new IllegalArgumentException("an iovec array holds 1 to " + MAX_ENTRIES + " entries, not " + capacity);
        }
        return new IoVecs(arena.allocate(ENTRY_BYTES * capacity, 8), capacity);
    }

    public int capacity() {
        return capacity;
    }

    /** Entry {@code i}: {@code length} bytes at {@code offset} of {@code region} (checked against the region). */
    public void set(int i, MemorySegment region, long offset, long length) {
        if (offset < 0 || length < 0 || length > region.byteSize() - offset) {
            throw new IndexOutOfBoundsException("iovec " + i + ": " + length + " bytes at " + offset + " of a "
                    + region.byteSize() + "-byte region");
        }
        long at = ENTRY_BYTES * i; // the segment's bounds check refuses i outside the array
        array.set(ValueLayout.JAVA_LONG, at, region.address() + offset);
        array.set(ValueLayout.JAVA_LONG, at + 8, length);
    }

    /** Entry {@code i}'s length. */
    public long length(int i) {
        return array.get(ValueLayout.JAVA_LONG, ENTRY_BYTES * i + 8);
    }

    /** Entry {@code i}'s address ({@code iov_base}). */
    public long base(int i) {
        return array.get(ValueLayout.JAVA_LONG, ENTRY_BYTES * i);
    }

    /**
     * Entry {@code i} becomes the rest of entry {@code j} of {@code from} after its first {@code skip} bytes (0 to that
     * entry's length): where a vectored transfer that stopped inside an entry resumes.
     */
    public void setRest(int i, IoVecs from, int j, long skip) {
        long length = from.length(j);
        if (skip < 0 || skip > length) {
            throw new IndexOutOfBoundsException("skip " + skip + " of iovec " + j + "'s " + length + " bytes");
        }
        long at = ENTRY_BYTES * i;
        array.set(ValueLayout.JAVA_LONG, at, from.base(j) + skip);
        array.set(ValueLayout.JAVA_LONG, at + 8, length - skip);
    }

    /**
     * Where a vectored transfer over a run of entries stands: the entry it is in and the bytes of that entry already
     * moved. The one way a short transfer goes on (the synchronous calls of {@link BlockFile} and the io_uring
     * engine): from the next whole entry, or, when it stopped inside one, with that entry's rest alone through an
     * entry of the caller's own ({@link #setRest}); the entries of the run are only read, never rewritten, so iovecs
     * built once may be shared by transfers in flight. A flyweight: one per transfer slot, reused.
     */
    public static final class Cursor {
        private IoVecs iov;
        private int entry;
        private int end;
        private long skip;

        /** Stands at the start of entries {@code from} to {@code from + count - 1} of {@code iov}. */
        public void start(IoVecs iov, int from, int count) {
            this.iov = iov;
            this.entry = from;
            this.end = from + count;
            this.skip = 0;
        }

        /** Lets go of the iovecs (so that a finished transfer keeps none reachable). */
        public void clear() {
            iov = null;
        }

        /** Moves on past {@code moved} more bytes; false when the run holds fewer (the kernel moved more than asked). */
        public boolean advance(long moved) {
            long at = skip + moved;
            while (entry < end && at >= iov.length(entry)) {
                at -= iov.length(entry);
                entry++;
            }
            skip = entry < end ? at : 0;
            return at == 0 || entry < end;
        }

        /**
         * The iovecs for the rest of the transfer: the run itself from the current entry, or, inside an entry,
         * {@code rest} with its entry 0 set to that entry's rest; {@link #index()} and {@link #count()} say which
         * entries.
         */
        public IoVecs array(IoVecs rest) {
            if (skip == 0) {
                return iov;
            }
            rest.setRest(0, iov, entry, skip);
            return rest;
        }

        /** The first entry of {@link #array} to hand over. */
        public int index() {
            return skip == 0 ? entry : 0;
        }

        /** How many entries of {@link #array} to hand over: 0 once the run is used up. */
        public int count() {
            return skip == 0 ? end - entry : 1;
        }
    }

    /** Sum of the lengths of entries {@code from} to {@code from + count - 1}. */
    public long totalLength(int from, int count) {
        long n = 0;
        for (int i = from; i < from + count; i++) {
            n += length(i);
        }
        return n;
    }

    /** The native address of entry {@code i}: what a vectored system call or an io_uring entry takes (bounds-checked). */
    public long entryAddress(int i) {
        if (i < 0 || i >= capacity) {
            throw new IndexOutOfBoundsException("iovec " + i + " of " + capacity);
        }
        return array.address() + ENTRY_BYTES * i;
    }

    /** The whole native array. */
    public MemorySegment segment() {
        return array;
    }
}
