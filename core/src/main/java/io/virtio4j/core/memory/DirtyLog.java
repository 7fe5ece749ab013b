package io.virtio4j.core.memory;

import io.virtio4j.core.error.DirtyLogOverflowException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * vhost's dirty-page log (migration): a bitmap with one bit per 4 KiB guest-physical page, page {@code p} being
 * bit {@code p % 8} of byte {@code p / 8}. The front-end owns and sizes it and reads and clears it while the
 * back-end sets bits, so every update is an atomic OR (the spec's rule; libvhost-user and DPDK do the same):
 * a plain read-modify-write could put back a bit the front-end just cleared, or drop one it did not see.
 *
 * <p>A writer marks a page after its bytes are in guest memory, never before: the front-end copies a page after it
 * finds its bit, so a bit set before the write could be found and cleared, the page copied, and the write then
 * land in a page nobody copies again.
 *
 * <p>The Java API has no atomic OR on single bytes of a memory segment, so the OR is done on the aligned 32-bit word
 * holding the byte: the log must therefore lie in a mapping that is 4-byte aligned and holds every word the log's
 * bytes fall in (a page-aligned mapping of whole pages does). Bits outside the log's bytes are never set.
 *
 * <p>Safe for any number of threads. Writing beyond the log is the front-end's error (it sized the log too small
 * for its memory): {@link DirtyLogOverflowException}, which breaks the queue that wrote.
 */
public final class DirtyLog {
    /** VHOST_LOG_PAGE: 4 KiB per bit, whatever the host's page size. */
    public static final int PAGE_SHIFT = 12;
    public static final long PAGE_SIZE = 1L << PAGE_SHIFT;

    private static final VarHandle WORD = ValueLayout.JAVA_INT.varHandle();
    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private final MemorySegment mapping;
    private final long start;
    private final long bytes;

    /**
     * @param mapping the mapping holding the log, 4-byte aligned
     * @param start   where the log's byte 0 lies in {@code mapping}
     * @param bytes   the log's size (it covers {@code bytes * 8} pages)
     * @throws IllegalArgumentException when the log or a word it lies in is not inside {@code mapping}
     */
    public DirtyLog(MemorySegment mapping, long start, long bytes) {
        if (mapping.address() % Integer.BYTES != 0) {
            throw new IllegalArgumentException("mapping at 0x" + Long.toHexString(mapping.address()) + " is not 4-byte aligned");
        }
        if (start < 0 || bytes < 0 || bytes > mapping.byteSize() - start
                || ((start + bytes + 3) & ~3L) > mapping.byteSize()) {
            throw new IllegalArgumentException("log [" + start + ", +" + bytes + ") does not lie in whole 32-bit words of a "
                    + mapping.byteSize() + "-byte mapping");
        }
        this.mapping = mapping;
        this.start = start;
        this.bytes = bytes;
    }

    /**
     * Bytes of a log with a bit for every 4 KiB page of guest-physical [0, {@code guestEnd}): one bit per page, in
     * whole u64 chunks as QEMU sizes its log ({@code VHOST_LOG_CHUNK}).
     */
    public static long bytesCovering(long guestEnd) {
        if (guestEnd < 0) {
            throw new IllegalArgumentException("guest memory end " + guestEnd);
        }
        long bytes = Math.ceilDiv(Math.ceilDiv(guestEnd, PAGE_SIZE), 8);
        return Math.ceilDiv(bytes, Long.BYTES) * Long.BYTES;
    }

    /** The log's size in bytes. */
    public long byteSize() {
        return bytes;
    }

    /** How many pages the log covers. */
    public long pages() {
        return bytes << 3;
    }

    /**
     * Marks every page of guest-physical [{@code gpa}, +{@code len}) dirty; nothing for {@code len} 0.
     *
     * @throws DirtyLogOverflowException naming the range's first page without a bit when it has one (the log is
     *         checked before any bit is set), also when the range wraps past 2^64
     */
    public void mark(long gpa, long len) {
        if (len <= 0) {
            return;
        }
        long first = gpa >>> PAGE_SHIFT;
        long end = gpa + len - 1;
        long last = Long.compareUnsigned(end, gpa) < 0 ? -1L : end >>> PAGE_SHIFT; // a wrap: page 2^52 - 1, past any log
        if (Long.compareUnsigned(last, pages()) >= 0) {
            // the first page of the range without a bit
            throw new DirtyLogOverflowException(Long.compareUnsigned(first, pages()) >= 0 ? first : pages(), bytes);
        }
        for (long p = first; p <= last; p++) {
            set(p);
        }
    }

    /**
     * Marks the guest pages behind host memory [{@code address}, +{@code len}) that lies in one region of
     * {@code memory} (a piece of a buffer a device wrote: a descriptor chain's element, an iovec it became).
     *
     * @throws IllegalArgumentException when no region of {@code memory} holds the range (the caller's bug: the
     *         range came from that memory)
     * @throws DirtyLogOverflowException as {@link #mark}
     */
    public void markHost(GuestMemory memory, long address, long len) {
        for (int i = 0; i < memory.regionCount(); i++) {
            MemorySegment r = memory.region(i);
            long off = address - r.address();
            if (Long.compareUnsigned(off, r.byteSize()) < 0 && len <= r.byteSize() - off) {
                mark(memory.regionStart(i) + off, len);
                return;
            }
        }
        throw new IllegalArgumentException("host range [0x" + Long.toHexString(address) + ", +" + len
                + ") is not inside one region of guest memory " + memory.describe());
    }

    /** Marks [{@code offset}, +{@code len}) of {@code region}, a region of {@code memory}, as {@link #markHost}. */
    public void markHost(GuestMemory memory, MemorySegment region, long offset, long len) {
        markHost(memory, region.address() + offset, len);
    }

    /** Whether page {@code page} is marked; for the front-end's side (and tests). */
    public boolean isDirty(long page) {
        checkPage(page);
        long at = start + (page >>> 3);
        return (((int) WORD.getVolatile(mapping, at & ~3L)) & bitInWord(at, page)) != 0;
    }

    /**
     * How many pages are marked: a count, page by page, that a writer may change as it goes (the front-end's
     * statistics, a benchmark's proof that its writes were logged).
     */
    public long dirtyPages() {
        long n = 0;
        for (long p = 0; p < pages(); p++) {
            if (isDirty(p)) {
                n++;
            }
        }
        return n;
    }

    /**
     * Clears page {@code page}'s bit and answers whether it was set, atomically (a bit set meanwhile by the
     * back-end is either answered here or left set): the front-end's read of the log.
     */
    public boolean testAndClear(long page) {
        checkPage(page);
        long at = start + (page >>> 3);
        int bit = bitInWord(at, page);
        return (((int) WORD.getAndBitwiseAnd(mapping, at & ~3L, ~bit)) & bit) != 0;
    }

    private void checkPage(long page) {
        if (page < 0 || page >= pages()) {
            throw new IndexOutOfBoundsException("page " + page + " outside the log's " + pages() + " pages");
        }
    }

    private void set(long page) {
        long at = start + (page >>> 3);
        WORD.getAndBitwiseOr(mapping, at & ~3L, bitInWord(at, page));
    }

    /** The bit of {@code page} (in log byte at mapping offset {@code at}) within the 32-bit word holding that byte. */
    private static int bitInWord(long at, long page) {
        int byteInWord = (int) (at & 3);
        int shift = (LITTLE ? byteInWord : 3 - byteInWord) * 8 + (int) (page & 7);
        return 1 << shift;
    }
}
