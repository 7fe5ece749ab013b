package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The ADD_MEM_REG and REM_MEM_REG payload: {@code u64 padding;} then one region description. ADD_MEM_REG
 * carries the region's file descriptor; REM_MEM_REG matches a mapped region by its addresses and size.
 */
public record SingleMemoryRegion(MemoryRegionDescription region) {
    public static final int SIZE = 8 + MemoryRegionDescription.SIZE;

    public static SingleMemoryRegion decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        Payloads.requireSize(request, payload, SIZE);
        return new SingleMemoryRegion(MemoryRegionDescription.decode(request, "region", payload, 8));
    }

    public byte[] encode() {
        ByteBuffer b = Payloads.buffer(SIZE).putLong(0);
        region.encodeTo(b);
        return b.array();
    }
}
