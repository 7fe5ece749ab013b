package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * One region of a memory table as the front-end describes it, before anything is mapped:
 * {@code u64 guest_phys_addr; u64 memory_size; u64 userspace_addr; u64 mmap_offset}. A decoded description is
 * non-empty, wraps neither address space, and {@code mmap_offset + memory_size} fits a signed 64-bit file
 * offset; whether the fd really holds that many bytes is the mapper's check.
 */
public record MemoryRegionDescription(long guestPhysAddr, long memorySize, long userspaceAddr, long mmapOffset) {
    public static final int SIZE = 32;

    /** Decodes the 32 bytes at {@code offset}; {@code field} names the region in errors (e.g. {@code regions[2]}). */
    static MemoryRegionDescription decode(String request, String field, MemorySegment payload, long offset)
            throws VhostUserProtocolException {
        long gpa = Payloads.u64(payload, offset);
        long size = Payloads.u64(payload, offset + 8);
        long uaddr = Payloads.u64(payload, offset + 16);
        long mmapOffset = Payloads.u64(payload, offset + 24);
        if (size == 0) {
            throw new VhostUserProtocolException(request, field + ".memory_size", size, "zero-sized region");
        }
        if (Long.compareUnsigned(gpa + size - 1, gpa) < 0) {
            throw new VhostUserProtocolException(request, field + ".guest_phys_addr", gpa,
                    "+ memory_size 0x" + Long.toHexString(size) + " wraps 64 bits");
        }
        if (Long.compareUnsigned(uaddr + size - 1, uaddr) < 0) {
            throw new VhostUserProtocolException(request, field + ".userspace_addr", uaddr,
                    "+ memory_size 0x" + Long.toHexString(size) + " wraps 64 bits");
        }
        if (mmapOffset < 0 || size < 0 || mmapOffset + size < 0) {
            throw new VhostUserProtocolException(request, field + ".mmap_offset", mmapOffset,
                    "+ memory_size 0x" + Long.toHexString(size) + " is beyond 2^63");
        }
        return new MemoryRegionDescription(gpa, size, uaddr, mmapOffset);
    }

    void encodeTo(ByteBuffer b) {
        b.putLong(guestPhysAddr).putLong(memorySize).putLong(userspaceAddr).putLong(mmapOffset);
    }

    @Override
    public String toString() {
        return String.format("region[gpa=0x%x size=0x%x uaddr=0x%x off=0x%x]", guestPhysAddr, memorySize, userspaceAddr,
                mmapOffset);
    }
}
