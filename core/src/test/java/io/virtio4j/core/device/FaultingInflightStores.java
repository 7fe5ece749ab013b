package io.virtio4j.core.device;

import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The inflight regions' release stores for {@code FaultingRingStoresChild} (core.layout's fault test, which runs
 * them on a truncated memfd in an interpreted JVM): an unsealed area can be shrunk by the front-end under its
 * mapping, and an 8- or 16-bit setRelease would then crash the JVM instead of raising the InternalError.
 */
public final class FaultingInflightStores {
    private FaultingInflightStores() {
    }

    /**
     * Sets up a split and a packed tracker over fresh regions in {@code memory} (4 KiB at least), each with one
     * buffer pushed and not published, and returns, by name, stores to run once the file under it is shrunk.
     */
    public static Map<String, Runnable> prepare(MemorySegment memory) {
        int size = 8;
        MemorySegment splitRegion = memory.asSlice(0, InflightLayout.queueRegionBytes(RingFormat.SPLIT, size));
        SplitInflight split = SplitInflight.recover(splitRegion, size, 0, new int[size]);
        split.fetched(3);
        split.pushed(3);
        MemorySegment packedRegion = memory.asSlice(2048, InflightLayout.queueRegionBytes(RingFormat.PACKED, size));
        PackedInflight packed = PackedInflight.recover(packedRegion, size, MemorySegment.NULL, 0, true);
        MemorySegment ring = MemorySegment.ofArray(new long[2 * size]);
        packed.fetched(5, ring, 0, 1);
        packed.pushed(5);
        Map<String, Runnable> stores = new LinkedHashMap<>();
        stores.put("inflight u8", () -> InflightRegions.setU8Release(splitRegion, 16, 1));
        stores.put("inflight u16", () -> InflightRegions.setU16Release(splitRegion, 14, 1));
        stores.put("split inflight publication", () -> split.published(1));
        stores.put("packed inflight publication", packed::published);
        return stores;
    }
}
