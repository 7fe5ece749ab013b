package io.virtio4j.jcstress;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One small ring, split or packed, in native memory with the project's own driver and device queues over it:
 * the fixture every litmus test builds in its {@code @State} constructor.
 *
 * <p>Layout of the one segment ({@link RingSegment}, guest address = offset): the ring areas of the format, then
 * {@value #BUFFERS_COUNT} data buffers of {@value #BUFFER_BYTES} bytes each from {@link #BUFFERS}, the first
 * cache line after the larger of the two formats' areas, so that buffer addresses do not depend on the format.
 *
 * <p>Once the queues are built (the packed driver zeroes its descriptor ring, as a fresh allocation must be),
 * everything they do not initialise is filled with <em>leftovers</em>, as if from an earlier lap of the ring:
 * every descriptor points at buffer {@value #STALE_BUFFER} with length 1 (packed: with buffer id
 * {@value #STALE_HEAD}, flags left at 0 so that no slot looks available or used), every split available entry
 * names head {@value #STALE_HEAD}, every split used element says id {@value #STALE_HEAD} length 1, and every data
 * byte is 0xFF (an int reads {@value #STALE_INT}). A reader that runs ahead of a publication therefore sees a
 * value that differs from both "nothing yet" and the right one, and the outcome says so.
 *
 * <p>Each jcstress sample builds a new ring, millions per run, and jcstress has no per-sample tear-down in which an
 * {@code Arena.ofShared()} could be closed. So the memory is a 64-byte aligned slice of a 1 MiB chunk from
 * {@link Arena#ofAuto()}: shared (both actor threads may touch it), never handed out twice, and freed by the
 * garbage collector once every ring carved from the chunk is unreachable. One arena per ring works too but
 * costs about ten times as much per sample (cleaner registration and reference processing), which cuts the
 * samples a short run collects.
 */
public final class Ring {
    public static final int QUEUE_SIZE = 4;
    public static final int BUFFER_BYTES = 64;
    public static final int BUFFERS_COUNT = 4;
    /** Guest address of buffer 0, the first cache line after the ring areas of either format. */
    public static final long BUFFERS = Math.max(RingSegment.dataOffset(RingFormat.SPLIT, QUEUE_SIZE, 64),
            RingSegment.dataOffset(RingFormat.PACKED, QUEUE_SIZE, 64));
    public static final int STALE_BUFFER = BUFFERS_COUNT - 1;
    public static final int STALE_HEAD = QUEUE_SIZE - 1;
    public static final int STALE_INT = -1;

    private static final long TOTAL = BUFFERS + (long) BUFFERS_COUNT * BUFFER_BYTES;
    private static final long CHUNK = 1 << 20;

    private static final long SLOT = SplitLayout.roundUp(TOTAL, 64);

    /** The chunk rings are being carved from, per constructing thread (so no locking). */
    private static final class Chunk {
        MemorySegment segment;
        long used = CHUNK;
    }

    private static final ThreadLocal<Chunk> CHUNKS = ThreadLocal.withInitial(Chunk::new);

    /** Kicks and calls are decided, never delivered: the litmus tests record the decisions. */
    private static final Notifier NONE = new Notifier() {
        @Override
        public void signal() {
        }

        @Override
        public boolean await(long timeoutNanos) {
            return false;
        }
    };

    public final MemorySegment memory;
    public final RingAreas areas;
    public final DriverQueue driver;
    public final DeviceQueue device;
    /** The driver's scatter-gather list (driver thread only). */
    public final ScatterGather sg = new ScatterGather(2);

    public Ring(RingFormat format, Ordering ordering, boolean eventIdx, AvailPublication publication) {
        RingSegment ring = RingSegment.carve(allocate(), format, QUEUE_SIZE, 64);
        memory = ring.segment();
        areas = ring.areas();
        driver = DriverQueue.over(areas,
                DriverOptions.defaults().withOrdering(ordering).withEventIdx(eventIdx).withPublication(publication),
                NONE);
        device = DeviceQueue.over(areas, ring.guestMemory(),
                DeviceOptions.defaults().withOrdering(ordering).withEventIdx(eventIdx), NONE);
        fillWithLeftovers();
    }

    /** A fresh (zeroed, never handed out before) 64-byte aligned slice for one ring and its buffers. */
    private static MemorySegment allocate() {
        Chunk c = CHUNKS.get();
        if (c.used + SLOT > CHUNK) {
            c.segment = Arena.ofAuto().allocate(CHUNK, 64);
            c.used = 0;
        }
        MemorySegment m = c.segment.asSlice(c.used, TOTAL);
        c.used += SLOT;
        return m;
    }

    /** Guest address (and segment offset) of data buffer {@code i}. */
    public static long buffer(int i) {
        if (i < 0 || i >= BUFFERS_COUNT) {
            throw new IndexOutOfBoundsException("buffer " + i);
        }
        return BUFFERS + (long) i * BUFFER_BYTES;
    }

    /** Plain store of an int into guest memory (the driver filling a request, or the device writing a reply). */
    public void putInt(long guestAddr, int value) {
        memory.set(ValueLayout.JAVA_INT_UNALIGNED, guestAddr, value);
    }

    /** Plain load of an int from guest memory. */
    public int getInt(long guestAddr) {
        return memory.get(ValueLayout.JAVA_INT_UNALIGNED, guestAddr);
    }

    /** Plain stores only, into fields the queues have not published: the state constructor's thread owns them. */
    private void fillWithLeftovers() {
        switch (areas) {
            case SplitRingAreas split -> {
                AvailRing avail = new AvailRing(split.availRing(), QUEUE_SIZE);
                UsedRing used = new UsedRing(split.usedRing(), QUEUE_SIZE);
                for (int i = 0; i < QUEUE_SIZE; i++) {
                    Descriptors.write(split.descTable(), 0, i, buffer(STALE_BUFFER), 1, 0, 0);
                    avail.entry(i, STALE_HEAD);
                    used.elem(i, STALE_HEAD, 1);
                }
            }
            case PackedRingAreas packed -> {
                for (int i = 0; i < QUEUE_SIZE; i++) {
                    PackedDescriptors.write(packed.descRing(), i, buffer(STALE_BUFFER), 1, STALE_HEAD);
                }
            }
        }
        memory.asSlice(BUFFERS).fill((byte) 0xFF);
    }
}
