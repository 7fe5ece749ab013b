package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The SET_MEM_TABLE payload: {@code u32 nregions; u32 padding;} then {@code nregions} region descriptions, one
 * file descriptor per region coming with the message in the same order. The payload is exactly as long as its
 * regions (QEMU sends {@code 8 + 32 * nregions}); the padding is ignored.
 */
public record MemoryTableDescription(List<MemoryRegionDescription> regions) {
    public static final int HEADER_SIZE = 8;
    /** Most regions one table may have: one descriptor each, and a message carries at most this many. */
    public static final int MAX_REGIONS = Request.MAX_FDS;
    public static final int MAX_SIZE = HEADER_SIZE + MemoryRegionDescription.SIZE * MAX_REGIONS;

    public MemoryTableDescription {
        regions = List.copyOf(regions);
        if (regions.isEmpty() || regions.size() > MAX_REGIONS) {
            throw new IllegalArgumentException("a memory table has 1 to " + MAX_REGIONS + " regions, not " + regions.size());
        }
    }

    public static MemoryTableDescription decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        if (payload.byteSize() < HEADER_SIZE) {
            throw new VhostUserProtocolException(request, "size", payload.byteSize(), "shorter than the table header");
        }
        long n = Payloads.u32(payload, 0);
        if (n == 0 || n > MAX_REGIONS) {
            throw new VhostUserProtocolException(request, "nregions", n, "must be in [1, " + MAX_REGIONS + "]");
        }
        long size = HEADER_SIZE + MemoryRegionDescription.SIZE * n;
        if (payload.byteSize() != size) {
            throw new VhostUserProtocolException(request, "size", payload.byteSize(), "must be 8 + 32 * nregions = " + size);
        }
        List<MemoryRegionDescription> regions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            regions.add(MemoryRegionDescription.decode(request, "regions[" + i + "]", payload,
                    HEADER_SIZE + (long) MemoryRegionDescription.SIZE * i));
        }
        return new MemoryTableDescription(regions);
    }

    public byte[] encode() {
        ByteBuffer b = Payloads.buffer(HEADER_SIZE + MemoryRegionDescription.SIZE * regions.size())
                .putInt(regions.size()).putInt(0);
        regions.forEach(r -> r.encodeTo(b));
        return b.array();
    }
}
