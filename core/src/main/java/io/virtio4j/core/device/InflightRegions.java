package io.virtio4j.core.device;

import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** What {@link SplitInflight} and {@link PackedInflight} share: the region's size check and the resubmit order. */
final class InflightRegions {
    private InflightRegions() {
    }

    /**
     * @throws IllegalArgumentException when {@code region} is not exactly a queue region of {@code format} and
     *         {@code size}, or not native memory aligned to 8 bytes (its fields are accessed aligned)
     */
    static void checkSize(MemorySegment region, RingFormat format, int size) {
        long want = InflightLayout.queueRegionBytes(format, size);
        if (region.byteSize() != want) {
            throw new IllegalArgumentException("a " + format + " queue of size " + size + " needs an inflight region of "
                    + want + " bytes, not " + region.byteSize());
        }
        if (!region.isNative() || region.address() % 8 != 0) {
            throw new IllegalArgumentException("the inflight region must be native memory aligned to 8 bytes");
        }
    }

    /**
     * Sorts the first {@code n} entries of {@code heads} by {@code counters[head]}, and by index among equal counters,
     * so that a region with duplicate counters (only a hostile front-end writes those) still resubmits in one
     * deterministic order. At restart only: it allocates.
     */
    static void sortByCounter(int[] heads, int n, long[] counters) {
        Integer[] boxed = new Integer[n];
        for (int k = 0; k < n; k++) {
            boxed[k] = heads[k];
        }
        Arrays.sort(boxed, (a, b) -> counters[a] != counters[b] ? Long.compare(counters[a], counters[b])
                : Integer.compare(a, b));
        for (int k = 0; k < n; k++) {
            heads[k] = boxed[k];
        }
    }
}
