package io.virtio4j.core.device;

import io.virtio4j.core.error.InvalidInflightRegionException;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/** What {@link SplitInflight} and {@link PackedInflight} share: the region's size check and the resubmit order. */
final class InflightRegions {
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN);

    private InflightRegions() {
    }

    /**
     * The queue size {@code region} is laid out for: the smallest queue size of {@code format}, at least the ring's
     * {@code size}, whose {@link InflightLayout#queueRegionBytes} is the region's length. It may exceed the ring's
     * size: QEMU asks for the area with its queue-size property while the driver may choose a smaller ring (virtio
     * 1.x lets it write a smaller queue size; Linux halves it when it cannot allocate the ring), and libvhost-user
     * and DPDK accept that. Several queue sizes share a length (the region is rounded up to 64 bytes); the
     * smallest is the one QEMU asked for whenever that is a power of two (split sizes always are).
     *
     * @throws IllegalArgumentException when no queue size from {@code size} up has a region of that length, or the
     *         region is not native memory aligned to 8 bytes (its fields are accessed aligned)
     */
    static int checkSize(MemorySegment region, RingFormat format, int size) {
        long bytes = region.byteSize();
        long header = format == RingFormat.PACKED ? InflightLayout.PACKED_HEADER_SIZE
                : InflightLayout.SPLIT_HEADER_SIZE;
        long entry = format == RingFormat.PACKED ? InflightLayout.PACKED_ENTRY_SIZE : InflightLayout.SPLIT_ENTRY_SIZE;
        // Only sizes whose unrounded region lies within the last 64 bytes can round up to the length.
        long from = Math.max(size, (bytes - InflightLayout.REGION_ALIGN - header) / entry + 1);
        long to = Math.min((bytes - header) / entry, Integer.MAX_VALUE);
        int found = -1;
        for (long n = from; n <= to; n++) {
            if (format.isValidQueueSize((int) n) && InflightLayout.queueRegionBytes(format, (int) n) == bytes) {
                found = (int) n;
                break;
            }
        }
        if (found < 0) {
            throw new IllegalArgumentException("a " + format + " queue of size " + size + " needs an inflight region"
                    + " of " + InflightLayout.queueRegionBytes(format, size) + " bytes (or of a larger queue size), not "
                    + bytes);
        }
        if (!region.isNative() || region.address() % 8 != 0) {
            throw new IllegalArgumentException("the inflight region must be native memory aligned to 8 bytes");
        }
        return found;
    }

    /**
     * Checks a recovered region's desc_num: the queue size the region was laid out for, which must fit its length
     * ({@link #checkSize}) and cover the ring's {@code size}.
     *
     * @throws InvalidInflightRegionException naming inflight.desc_num otherwise
     */
    static void checkDescNum(MemorySegment region, RingFormat format, int size, int descNum) {
        if (descNum < size || !format.isValidQueueSize(descNum)
                || InflightLayout.queueRegionBytes(format, descNum) != region.byteSize()) {
            throw new InvalidInflightRegionException("inflight.desc_num", descNum, "is not a " + format
                    + " queue size of at least the ring's " + size + " whose region is the " + region.byteSize()
                    + " bytes given");
        }
    }

    /**
     * Stores a u8 field of {@code region} with release semantics (every earlier load and store stays before it) as a
     * release fence and a plain store, never an 8-bit {@code setRelease}: the front-end may shrink an unsealed area
     * under the mapping, and on JDK 25 a fault in an interpreted 8- or 16-bit setRelease, setVolatile or setOpaque
     * crashes the JVM in its SIGBUS handler, where a plain store raises the InternalError the queue's thread turns
     * into a guest memory fault (see {@code Le.setU16Release}, the same rule for the rings).
     */
    static void setU8Release(MemorySegment region, long offset, int value) {
        VarHandle.releaseFence();
        region.set(ValueLayout.JAVA_BYTE, offset, (byte) value);
    }

    /** Stores a little-endian u16 field of {@code region} with release semantics, as {@link #setU8Release}. */
    static void setU16Release(MemorySegment region, long offset, int value) {
        VarHandle.releaseFence();
        region.set(U16, offset, (short) value);
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
