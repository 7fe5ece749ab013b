package io.virtio4j.core.layout;

import io.virtio4j.core.memory.GuestMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One ring, split or packed, and the memory its descriptors point at, in a single segment: what two threads or two
 * processes (a shared memfd mapping) need to run a ring over shared memory without a translation table.
 *
 * <p>Layout: the ring's areas at offset 0, carved by {@link RingFormat#carve} (each side's writes on its own
 * cache lines), then the data area from {@link #dataOffset()}, the ring's size rounded up to {@code dataAlign}
 * (e.g. 64 to keep the data off the ring's last cache line, 4096 for page-aligned buffers). Guest address =
 * offset in the segment ({@link #guestMemory()}), so a buffer at data offset {@code o} has guest address
 * {@code dataOffset() + o}.
 */
public final class RingSegment {
    /** Alignment of the segment: the used ring's cache line is counted from its start. */
    public static final long SEGMENT_ALIGN = 64;

    private final MemorySegment segment;
    private final RingAreas areas;
    private final long dataOffset;

    private RingSegment(MemorySegment segment, RingAreas areas, long dataOffset) {
        this.segment = segment;
        this.areas = areas;
        this.dataOffset = dataOffset;
    }

    /**
     * Offset of the data area after a ring of {@code queueSize} entries.
     *
     * @throws IllegalArgumentException when the queue size is invalid or {@code dataAlign} is not a positive power
     *         of two
     */
    public static long dataOffset(RingFormat format, int queueSize, long dataAlign) {
        format.requireValidQueueSize(queueSize);
        if (dataAlign <= 0 || Long.bitCount(dataAlign) != 1) {
            throw new IllegalArgumentException("data alignment " + dataAlign + " is not a positive power of two");
        }
        return SplitLayout.roundUp(format.contiguousBytes(queueSize), dataAlign);
    }

    /** Bytes of a segment holding the ring and {@code dataBytes} of data aligned to {@code dataAlign}. */
    public static long bytes(RingFormat format, int queueSize, long dataAlign, long dataBytes) {
        if (dataBytes < 0) {
            throw new IllegalArgumentException("data area of " + dataBytes + " bytes");
        }
        return Math.addExact(dataOffset(format, queueSize, dataAlign), dataBytes);
    }

    /**
     * Lays the ring out at the start of {@code segment}; the rest of it, from {@link #dataOffset}, is the
     * data area. Writes nothing: the queues initialise the ring headers they own.
     *
     * @throws IllegalArgumentException when the segment is not {@value #SEGMENT_ALIGN}-byte aligned, or too
     *         small for the ring and an empty data area, or the queue size or {@code dataAlign} is invalid
     */
    public static RingSegment carve(MemorySegment segment, RingFormat format, int queueSize, long dataAlign) {
        long dataOffset = dataOffset(format, queueSize, dataAlign);
        if (segment.address() % SEGMENT_ALIGN != 0) {
            throw new IllegalArgumentException("ring segment address 0x" + Long.toHexString(segment.address())
                    + " is not " + SEGMENT_ALIGN + "-byte aligned");
        }
        if (segment.byteSize() < dataOffset) {
            throw new IllegalArgumentException("a ring of " + queueSize + " entries with data aligned to "
                    + dataAlign + " needs " + dataOffset + " bytes before its data, segment has " + segment.byteSize());
        }
        return new RingSegment(segment, format.carve(segment, queueSize), dataOffset);
    }

    /**
     * A new zeroed segment from {@code arena}, aligned to {@code dataAlign} (at least
     * {@value #SEGMENT_ALIGN}) so that the data area is aligned in memory too, with the ring carved.
     */
    public static RingSegment allocate(Arena arena, RingFormat format, int queueSize, long dataAlign, long dataBytes) {
        long bytes = bytes(format, queueSize, dataAlign, dataBytes);
        return carve(arena.allocate(bytes, Math.max(dataAlign, SEGMENT_ALIGN)), format, queueSize, dataAlign);
    }

    /** The whole segment, 64-byte aligned. */
    public MemorySegment segment() {
        return segment;
    }

    /** The ring areas at the segment's start. */
    public RingAreas areas() {
        return areas;
    }

    public int queueSize() {
        return areas.queueSize();
    }

    /** Where the data area starts: a multiple of the {@code dataAlign} it was carved with. */
    public long dataOffset() {
        return dataOffset;
    }

    /** The data area: from {@link #dataOffset()} to the end of the segment. */
    public MemorySegment data() {
        return segment.asSlice(dataOffset);
    }

    /** The whole segment as guest memory, guest address = offset: what the device side translates through. */
    public GuestMemory guestMemory() {
        return GuestMemory.of(segment, 0);
    }
}
