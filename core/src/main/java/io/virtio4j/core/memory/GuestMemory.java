package io.virtio4j.core.memory;

import io.virtio4j.core.error.AddressOutOfRangeException;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The memory a device may touch on behalf of a driver: a set of non-overlapping regions, each a guest
 * address range backed by a {@link MemorySegment}. Translation turns (guest address, length) into
 * (region, offset) without allocating, or fails with {@link AddressOutOfRangeException}.
 *
 * <p>In process it is usually one region; over vhost-user it is the front-end's memory table. Lookups here are
 * for one region; a buffer crossing into an adjacent region is split by its caller (the device queues' chain,
 * region by region through {@link #find}). Immutable and safe to share between threads; a new memory table means a
 * new instance.
 */
public final class GuestMemory {
    private final long[] start;
    private final long[] size;
    private final MemorySegment[] segment;
    /**
     * The region indexes in ascending (unsigned) order of their start: {@link #find} searches it in O(log n), as a
     * front-end's table may have hundreds of regions (509 slots) and every descriptor is translated. Indexes stay
     * those of the regions' insertion order.
     */
    private final int[] byStart;

    private GuestMemory(long[] start, long[] size, MemorySegment[] segment) {
        this.start = start;
        this.size = size;
        this.segment = segment;
        this.byStart = new int[start.length];
        // Insertion sort (at most a few hundred regions, once per memory table), unsigned: guest addresses are.
        for (int i = 0; i < start.length; i++) {
            int j = i;
            while (j > 0 && Long.compareUnsigned(start[byStart[j - 1]], start[i]) > 0) {
                byStart[j] = byStart[j - 1];
                j--;
            }
            byStart[j] = i;
        }
    }

    /** One region: guest address {@code guestBase} maps to offset 0 of {@code seg}. */
    public static GuestMemory of(MemorySegment seg, long guestBase) {
        return builder().region(guestBase, seg).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public int regionCount() {
        return segment.length;
    }

    public MemorySegment region(int index) {
        return segment[index];
    }

    public long regionStart(int index) {
        return start[index];
    }

    public long regionSize(int index) {
        return size[index];
    }

    /**
     * Index of the region holding all of [{@code addr}, {@code addr + len}), or -1 when none does
     * (including when the range overflows 64 bits or spans two regions). A zero-length range must
     * still start inside or at the end of a region.
     */
    public int find(long addr, long len) {
        if (len < 0) {
            return -1;
        }
        if (byStart.length == 1) { // the in-process case: one check, as cheap as ever
            return holds(0, addr, len) ? 0 : -1;
        }
        // The region with the greatest start not above addr is the only one that can hold it: regions do not
        // overlap. (A zero-length range at the end of one region and the start of the next gets the next.)
        int lo = 0;
        int hi = byStart.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(start[byStart[mid]], addr) <= 0) {
                found = byStart[mid];
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found >= 0 && holds(found, addr, len) ? found : -1;
    }

    /** Whether region {@code i} holds all of [{@code addr}, {@code addr + len}), {@code len >= 0}. */
    private boolean holds(int i, long addr, long len) {
        long off = addr - start[i];
        // unsigned: off wraps to a huge value when addr is below the region's start
        return Long.compareUnsigned(off, size[i]) <= 0 && len <= size[i] - off;
    }

    /**
     * Region of [{@code addr}, {@code addr + len}); {@code field} names the guest-written field for the error.
     *
     * @throws AddressOutOfRangeException when the range overflows or is not inside one region
     */
    public int require(long addr, long len, String field) {
        int r = find(addr, len);
        if (r < 0) {
            throw outOfRange(addr, len, field);
        }
        return r;
    }

    /** Offset of {@code addr} inside region {@code region}. */
    public long offsetIn(int region, long addr) {
        return addr - start[region];
    }

    /** A bounded slice for [{@code addr}, {@code addr + len}): allocates a segment object; not for hot paths. */
    public MemorySegment slice(long addr, long len, String field) {
        int r = require(addr, len, field);
        return segment[r].asSlice(addr - start[r], len);
    }

    /**
     * The error for a buffer [{@code addr}, +{@code len}) that the regions do not cover even taken together
     * (a gap, or past the last region), or whose range overflows; {@code field} names the guest-written field.
     */
    public AddressOutOfRangeException notCovered(long addr, long len, String field) {
        if (len < 0 || Long.compareUnsigned(addr + len, addr) < 0) {
            return outOfRange(addr, len, field);
        }
        return new AddressOutOfRangeException(field, addr, "range [0x" + Long.toHexString(addr) + ", +"
                + Long.toUnsignedString(len) + ") is not covered by guest memory " + describe()
                + " (a buffer may continue into an adjacent region, not across a gap)");
    }

    private AddressOutOfRangeException outOfRange(long addr, long len, String field) {
        if (len < 0 || Long.compareUnsigned(addr + len, addr) < 0) {
            return new AddressOutOfRangeException(field, addr,
                    "address 0x" + Long.toHexString(addr) + " + length " + Long.toUnsignedString(len) + " overflows 64 bits");
        }
        return new AddressOutOfRangeException(field, addr, "range [0x" + Long.toHexString(addr) + ", +"
                + Long.toUnsignedString(len) + ") is not inside one guest memory region " + describe());
    }

    public String describe() {
        StringBuilder sb = new StringBuilder("{");
        for (int i = 0; i < start.length; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append("[0x").append(Long.toHexString(start[i])).append(", 0x")
                    .append(Long.toHexString(start[i] + size[i])).append(')');
        }
        return sb.append('}').toString();
    }

    /** Collects regions and checks they are non-empty, do not wrap and do not overlap. */
    public static final class Builder {
        private long[] start = new long[4];
        private long[] size = new long[4];
        private MemorySegment[] segment = new MemorySegment[4];
        private int count;

        public Builder region(long guestStart, MemorySegment seg) {
            long len = seg.byteSize();
            if (len == 0) {
                throw new IllegalArgumentException("region at 0x" + Long.toHexString(guestStart) + " is empty");
            }
            if (Long.compareUnsigned(guestStart + len - 1, guestStart) < 0) {
                throw new IllegalArgumentException("region at 0x" + Long.toHexString(guestStart)
                        + " of " + len + " bytes wraps the 64-bit address space");
            }
            for (int i = 0; i < count; i++) {
                boolean disjoint = Long.compareUnsigned(guestStart + len - 1, start[i]) < 0
                        || Long.compareUnsigned(start[i] + size[i] - 1, guestStart) < 0;
                if (!disjoint) {
                    throw new IllegalArgumentException("region [0x" + Long.toHexString(guestStart) + ", +" + len
                            + ") overlaps region [0x" + Long.toHexString(start[i]) + ", +" + size[i] + ")");
                }
            }
            if (count == start.length) {
                start = Arrays.copyOf(start, count * 2);
                size = Arrays.copyOf(size, count * 2);
                segment = Arrays.copyOf(segment, count * 2);
            }
            start[count] = guestStart;
            size[count] = len;
            segment[count] = seg;
            count++;
            return this;
        }

        public GuestMemory build() {
            if (count == 0) {
                throw new IllegalArgumentException("guest memory needs at least one region");
            }
            return new GuestMemory(Arrays.copyOf(start, count), Arrays.copyOf(size, count),
                    Arrays.copyOf(segment, count));
        }
    }
}
