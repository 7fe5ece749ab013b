package io.virtio4j.vhost.memory;

import java.lang.foreign.MemorySegment;

/**
 * One region of the front-end's memory table, mapped here.
 *
 * @param guestPhysAddr start in guest-physical space (descriptor addresses)
 * @param size          bytes
 * @param userAddr      start in the front-end's virtual address space (ring addresses)
 * @param mmapOffset    offset in the region's fd where its data begins
 * @param data          the region's {@code size} bytes, mapped
 */
public record MemoryRegion(long guestPhysAddr, long size, long userAddr, long mmapOffset, MemorySegment data) {
}
