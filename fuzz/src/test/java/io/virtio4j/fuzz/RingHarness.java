package io.virtio4j.fuzz;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.policy.AvailPublication;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * One ring of either format, with a driver queue and a device queue over it, in guest memory fenced by canaries:
 * the ring areas, one indirect table per entry, then a pool of buffer slots ({@link #slotAddress}). Guest address =
 * offset in {@link #guest}. The first bytes of the input choose the shape (format, queue size, features), so the
 * fuzzer explores them all with one target.
 *
 * <p>Owns a confined arena: {@link #close()} frees everything, and checks the canaries first (a write outside guest
 * memory is the one thing a bounds-checked queue must never do).
 */
final class RingHarness implements AutoCloseable {
    static final int ELEM_MAX = 64;
    private static final int CANARY = 64;
    private static final byte CANARY_BYTE = (byte) 0xA5;
    private static final int[] SPLIT_SIZES = {1, 2, 4, 8, 16};
    private static final int[] PACKED_SIZES = {1, 2, 3, 5, 8, 13, 16};

    /** Counts notifications: the fuzz targets run both sides on one thread, nobody waits. */
    static final class CountingNotifier implements Notifier {
        long signals;

        @Override
        public void signal() {
            signals++;
        }

        @Override
        public boolean await(long timeoutNanos) {
            boolean was = signals > 0;
            signals = 0;
            return was;
        }
    }

    final Arena arena = Arena.ofConfined();
    final RingFormat format;
    final int size;
    /** Elements per buffer the honest driver adds at most (and per indirect table). */
    final int maxElements;
    final boolean inOrder;
    final MemorySegment all;
    final MemorySegment guest;
    final RingSegment ring;
    final long indirectBase;
    final long poolBase;
    final DriverQueue driver;
    final DeviceQueue device;
    final DeviceOptions deviceOptions;
    /** This queue's inflight region (vhost-user's shared area), fenced by canaries like guest memory. */
    final MemorySegment inflightRegion;
    private final MemorySegment regionOuter;
    final CountingNotifier kicks = new CountingNotifier();
    final CountingNotifier calls = new CountingNotifier();

    RingHarness(FuzzInput in) {
        int shape = in.u8();
        format = (shape & 1) == 0 ? RingFormat.SPLIT : RingFormat.PACKED;
        int[] sizes = format == RingFormat.SPLIT ? SPLIT_SIZES : PACKED_SIZES;
        size = sizes[(shape >>> 1) % sizes.length];
        maxElements = Math.min(size, 6);
        int features = in.u8();
        boolean eventIdx = (features & 1) != 0;
        boolean indirect = (features & 2) != 0 && maxElements >= 2;
        inOrder = (features & 4) != 0;
        boolean strong = (features & 8) != 0;
        AvailPublication publication = (features & 16) != 0 ? AvailPublication.LAZY : AvailPublication.EAGER;
        boolean cachedAvail = (features & 32) != 0;
        boolean deviceIndirect = indirect || (features & 64) != 0;

        long indirectBytes = DriverOptions.indirectTablesBytes(size, Math.max(2, maxElements));
        long poolBytes = (long) size * maxElements * ELEM_MAX;
        long ringBytes = RingSegment.bytes(format, size, 64, indirectBytes + poolBytes);
        all = arena.allocate(ringBytes + 2L * CANARY, 64);
        all.fill(CANARY_BYTE);
        guest = all.asSlice(CANARY, ringBytes);
        guest.fill((byte) 0);
        ring = RingSegment.carve(guest, format, size, 64);
        indirectBase = ring.dataOffset();
        poolBase = indirectBase + indirectBytes;

        Ordering ordering = strong ? Ordering.STRONG : Ordering.WEAK;
        DriverOptions d = DriverOptions.defaults().withOrdering(ordering).withEventIdx(eventIdx)
                .withPublication(publication).withInOrder(inOrder);
        if (indirect) {
            d = d.withIndirect(guest.asSlice(indirectBase, indirectBytes), indirectBase, maxElements, 2);
        }
        driver = DriverQueue.over(ring.areas(), d, kicks);
        deviceOptions = new DeviceOptions(ordering, eventIdx, deviceIndirect, cachedAvail, inOrder);
        device = newDevice();
        long regionBytes = InflightLayout.queueRegionBytes(format, size);
        regionOuter = arena.allocate(regionBytes + 2L * CANARY, 64);
        regionOuter.fill(CANARY_BYTE);
        inflightRegion = regionOuter.asSlice(CANARY, regionBytes);
    }

    /** A new device queue over this ring, at its initial state: a back-end (re)starting. */
    DeviceQueue newDevice() {
        return DeviceQueue.over(ring.areas(), ring.guestMemory(), deviceOptions, calls);
    }

    /** Guest address of element {@code e} of buffer slot {@code slot}. */
    long slotAddress(int slot, int e) {
        return poolBase + ((long) slot * maxElements + e) * ELEM_MAX;
    }

    /** The buffer slot holding guest address {@code addr}, or -1 when it is not in the pool. */
    int slotOf(long addr) {
        if (addr < poolBase || addr >= guest.byteSize()) {
            return -1;
        }
        return (int) ((addr - poolBase) / ((long) maxElements * ELEM_MAX));
    }

    /**
     * The areas the driver writes and the device reads (split: descriptor table, available ring, indirect
     * tables; packed: descriptor ring, driver event suppression, indirect tables), as [offset, length) pairs in
     * guest memory: where a hostile driver scribbles.
     */
    long[][] driverAreas() {
        RingAreas areas = ring.areas();
        return switch (areas) {
            case SplitRingAreas s -> new long[][]{area(s.descTable()), area(s.availRing()), indirectArea()};
            case PackedRingAreas p -> new long[][]{area(p.descRing()), area(p.driverEvent()), indirectArea()};
        };
    }

    /** The areas the device writes and the driver reads (split: used ring; packed: descriptor ring, device event). */
    long[][] deviceAreas() {
        RingAreas areas = ring.areas();
        return switch (areas) {
            case SplitRingAreas s -> new long[][]{area(s.usedRing())};
            case PackedRingAreas p -> new long[][]{area(p.descRing()), area(p.deviceEvent())};
        };
    }

    private long[] area(MemorySegment s) {
        return new long[]{s.address() - guest.address(), s.byteSize()};
    }

    private long[] indirectArea() {
        return new long[]{indirectBase, poolBase - indirectBase};
    }

    /** Writes 1, 2, 4 or 8 bytes the input chooses at an offset it chooses inside one of {@code areas} of guest memory. */
    void scribble(FuzzInput in, long[][] areas) {
        scribble(in, guest, areas);
    }

    /** The same into {@code target}, {@code areas} being [offset, length) pairs in it. */
    static void scribble(FuzzInput in, MemorySegment target, long[][] areas) {
        long[] a = areas[in.below(areas.length)];
        int width = 1 << in.below(4);
        long off = a[0] + (in.u16() % Math.max(1, a[1]));
        off = Math.min(off, a[0] + a[1] - width);
        off = Math.max(off, a[0]);
        long value = in.u64();
        for (int i = 0; i < width && off + i < target.byteSize(); i++) {
            target.set(ValueLayout.JAVA_BYTE, off + i, (byte) (value >>> (8 * i)));
        }
    }

    /** The byte a buffer with pattern {@code seed} holds at position {@code pos}. */
    static byte pattern(long seed, long pos) {
        long z = seed * 0x9E3779B97F4A7C15L + pos;
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        return (byte) (z ^ (z >>> 29));
    }

    @Override
    public void close() {
        try {
            for (long i = 0; i < CANARY; i++) {
                assertEquals(CANARY_BYTE, regionOuter.get(ValueLayout.JAVA_BYTE, i), "canary before the inflight region");
                assertEquals(CANARY_BYTE, regionOuter.get(ValueLayout.JAVA_BYTE, regionOuter.byteSize() - 1 - i),
                        "canary after the inflight region");
                assertEquals(CANARY_BYTE, all.get(ValueLayout.JAVA_BYTE, i), "canary before guest memory at " + i);
                assertEquals(CANARY_BYTE, all.get(ValueLayout.JAVA_BYTE, all.byteSize() - 1 - i),
                        "canary after guest memory at -" + i);
            }
        } finally {
            arena.close();
        }
    }
}
