package io.virtio4j.vhost.memory;

import io.virtio4j.core.memory.GuestMemory;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The front-end's memory as mapped by the back-end: guest-physical translation for descriptors (through
 * {@link GuestMemory}) and front-end-virtual translation for ring addresses. Immutable: a new table or a
 * region added or removed makes a new instance.
 */
public final class MemoryTable {
    private final List<MemoryRegion> regions;
    private final GuestMemory guestMemory;

    public MemoryTable(List<MemoryRegion> regions) {
        this.regions = List.copyOf(regions);
        if (this.regions.isEmpty()) {
            this.guestMemory = null;
            return;
        }
        GuestMemory.Builder b = GuestMemory.builder();
        for (MemoryRegion r : this.regions) {
            b.region(r.guestPhysAddr(), r.data());
        }
        this.guestMemory = b.build();
    }

    public static MemoryTable empty() {
        return new MemoryTable(List.of());
    }

    public List<MemoryRegion> regions() {
        return regions;
    }

    public boolean isEmpty() {
        return regions.isEmpty();
    }

    /** Guest-physical translation for the rings' descriptors; null while the table is empty. */
    public GuestMemory guestMemory() {
        return guestMemory;
    }

    /**
     * A slice of {@code len} bytes at front-end virtual address {@code userAddr}, or null when no single region
     * holds all of it (the caller reports which field was wrong).
     */
    public MemorySegment userSlice(long userAddr, long len) {
        for (MemoryRegion r : regions) {
            long off = userAddr - r.userAddr();
            if (Long.compareUnsigned(off, r.size()) < 0 && len >= 0 && len <= r.size() - off) {
                return r.data().asSlice(off, len);
            }
        }
        return null;
    }

    /**
     * The guest-physical address of front-end virtual {@code userAddr}, whose {@code len} bytes one region holds, or
     * -1 when none does: where a ring area the front-end gave by its virtual address lies for the dirty log.
     */
    public long userToGuest(long userAddr, long len) {
        for (MemoryRegion r : regions) {
            long off = userAddr - r.userAddr();
            if (Long.compareUnsigned(off, r.size()) < 0 && len >= 0 && len <= r.size() - off) {
                return r.guestPhysAddr() + off;
            }
        }
        return -1;
    }

    /** Whether guest-physical [{@code gpa}, +{@code size}) overlaps a region of this table. */
    public boolean overlapsGuest(long gpa, long size) {
        for (MemoryRegion r : regions) {
            if (rangesOverlap(gpa, size, r.guestPhysAddr(), r.size())) {
                return true;
            }
        }
        return false;
    }

    /** Whether front-end-virtual [{@code userAddr}, +{@code size}) overlaps a region of this table. */
    public boolean overlapsUser(long userAddr, long size) {
        for (MemoryRegion r : regions) {
            if (rangesOverlap(userAddr, size, r.userAddr(), r.size())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether unsigned [a, a + alen) and [b, b + blen) share a byte. Both are non-empty and may end exactly at 2^64
     * (their exclusive end then wraps to 0) but not wrap further (checked when decoded), so the inclusive ends
     * {@code a + alen - 1} and {@code b + blen - 1} never overflow and are what is compared.
     */
    static boolean rangesOverlap(long a, long alen, long b, long blen) {
        return Long.compareUnsigned(a, b + blen - 1) <= 0 && Long.compareUnsigned(b, a + alen - 1) <= 0;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("MemoryTable[");
        for (MemoryRegion r : regions) {
            sb.append(String.format(" gpa=0x%x size=0x%x uaddr=0x%x off=0x%x", r.guestPhysAddr(), r.size(),
                    r.userAddr(), r.mmapOffset()));
        }
        return sb.append(" ]").toString();
    }
}
