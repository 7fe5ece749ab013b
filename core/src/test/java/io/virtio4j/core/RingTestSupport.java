package io.virtio4j.core;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Shared fixtures for the core tests. All memory is native, 64-byte aligned and zeroed, and every guest
 * memory here maps guest address 0 to offset 0 of its segment, so a guest address is a segment offset.
 */
public final class RingTestSupport {
    private RingTestSupport() {
    }

    /** Alignment of every test allocation: a cache line, more than any ring area needs. */
    public static final long ALIGN = 64;

    public static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public static MemorySegment allocate(Arena arena, long bytes) {
        return arena.allocate(bytes, ALIGN);
    }

    public static byte[] bytes(MemorySegment seg, long offset, int count) {
        return seg.asSlice(offset, count).toArray(ValueLayout.JAVA_BYTE);
    }

    /** {@code values} as bytes, for writing expected byte patterns as readable hex literals. */
    public static byte[] bytes(int... values) {
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            b[i] = (byte) values[i];
        }
        return b;
    }

    /** A notifier that only counts signals; single-threaded tests never wait on it. */
    public static final class CountingNotifier implements Notifier {
        private int signals;

        @Override
        public void signal() {
            signals++;
        }

        @Override
        public boolean await(long timeoutNanos) {
            throw new UnsupportedOperationException("single-threaded tests never wait");
        }

        public int signals() {
            return signals;
        }
    }

    /** Whether a round trip needed a kick and whether the device then notified the driver. */
    public record Trip(boolean kicked, boolean notified) {
    }

    /**
     * A driver queue and a device queue over one ring, in one guest memory: the ring areas at guest address 0,
     * then (optionally) the driver's indirect tables, then data slots of {@link #SLOT_BYTES} each.
     */
    public static final class Pair implements AutoCloseable {
        public static final int SLOT_BYTES = 256;

        public final Arena arena;
        /** The whole guest memory; guest address = offset. */
        public final MemorySegment memory;
        public final GuestMemory guest;
        public final RingFormat format;
        public final RingAreas areas;
        /** Split rings only (null for packed): views of the shared ring headers, to observe (or forge) them. */
        public final AvailRing avail;
        public final UsedRing used;
        public final DriverQueue driver;
        public final DeviceQueue device;
        public final CountingNotifier kicks = new CountingNotifier();
        public final CountingNotifier calls = new CountingNotifier();
        /** Guest address of the indirect tables, or -1 without them. */
        public final long indirectTables;

        private final long dataBase;
        private final int dataSlots;
        private final ScatterGather sg = new ScatterGather(64);
        private int nextSlot;

        private Pair(RingFormat format, int queueSize, int indirectMax, int indirectThreshold, DriverOptions driverOptions,
                     DeviceOptions deviceOptions) {
            this.format = format;
            long tableBytes = indirectMax == 0 ? 0
                    : SplitLayout.roundUp(DriverOptions.indirectTablesBytes(queueSize, indirectMax), 4096);
            dataSlots = Math.max(64, 4 * queueSize);
            arena = Arena.ofConfined();
            RingSegment ring = RingSegment.allocate(arena, format, queueSize, 4096,
                    tableBytes + (long) dataSlots * SLOT_BYTES);
            long ringBytes = ring.dataOffset();
            dataBase = ringBytes + tableBytes;
            memory = ring.segment();
            guest = ring.guestMemory();
            areas = ring.areas();
            if (areas instanceof SplitRingAreas split) {
                avail = new AvailRing(split.availRing(), queueSize);
                used = new UsedRing(split.usedRing(), queueSize);
            } else {
                avail = null;
                used = null;
            }
            DriverOptions opts = driverOptions;
            if (indirectMax == 0) {
                indirectTables = -1;
            } else {
                indirectTables = ringBytes;
                opts = driverOptions.withIndirect(memory.asSlice(ringBytes, tableBytes), ringBytes, indirectMax,
                        indirectThreshold);
            }
            driver = DriverQueue.over(areas, opts, kicks);
            device = DeviceQueue.over(areas, guest, deviceOptions, calls);
        }

        public static Pair open(int queueSize, DriverOptions driverOptions, DeviceOptions deviceOptions) {
            return open(RingFormat.SPLIT, queueSize, driverOptions, deviceOptions);
        }

        public static Pair open(RingFormat format, int queueSize, DriverOptions driverOptions, DeviceOptions deviceOptions) {
            return new Pair(format, queueSize, 0, 0, driverOptions, deviceOptions);
        }

        /** The split ring's areas; for tests of split rings only. */
        public SplitRingAreas splitAreas() {
            return (SplitRingAreas) areas;
        }

        public static Pair open(int queueSize) {
            return open(queueSize, DriverOptions.defaults(), DeviceOptions.defaults());
        }

        /** As {@link #open(int, DriverOptions, DeviceOptions)}, the driver with indirect tables as in {@link #withIndirect}. */
        public static Pair open(int queueSize, int indirectMax, int indirectThreshold, DriverOptions driverOptions,
                                DeviceOptions deviceOptions) {
            return new Pair(RingFormat.SPLIT, queueSize, indirectMax, indirectThreshold, driverOptions, deviceOptions);
        }

        /** As {@link #open(int, int, int, DriverOptions, DeviceOptions)}, in either format. */
        public static Pair open(RingFormat format, int queueSize, int indirectMax, int indirectThreshold,
                                DriverOptions driverOptions, DeviceOptions deviceOptions) {
            return new Pair(format, queueSize, indirectMax, indirectThreshold, driverOptions, deviceOptions);
        }

        /** Both sides with VIRTIO_F_EVENT_IDX on or off, everything else default. */
        public static Pair withEventIdx(int queueSize, boolean eventIdx) {
            return open(queueSize, DriverOptions.defaults().withEventIdx(eventIdx),
                    DeviceOptions.defaults().withEventIdx(eventIdx));
        }

        /** Driver with indirect tables of {@code maxElements}, used from {@code threshold} elements on. */
        public static Pair withIndirect(int queueSize, int maxElements, int threshold) {
            return new Pair(RingFormat.SPLIT, queueSize, maxElements, threshold, DriverOptions.defaults(), DeviceOptions.defaults());
        }

        /** Guest address of data slot {@code k} (slots wrap around). */
        public long slot(int k) {
            return dataBase + (long) Math.floorMod(k, dataSlots) * SLOT_BYTES;
        }

        /** The reusable scatter-gather list, cleared. */
        public ScatterGather sg() {
            return sg.clear();
        }

        /** Adds a buffer of {@code readable} then {@code writable} elements of 16 bytes, each in a fresh slot. */
        public void add(Object token, int readable, int writable) {
            sg.clear();
            for (int i = 0; i < readable; i++) {
                sg.readable(slot(nextSlot++), 16);
            }
            for (int i = 0; i < writable; i++) {
                sg.writable(slot(nextSlot++), 16);
            }
            driver.add(sg, token);
        }

        /** Device pops a chain and pushes it back as used with nothing written; not yet published. */
        public int popAndPush() {
            DescriptorChain chain = device.pop();
            assertNotNull(chain, "device found no available chain");
            int head = chain.head();
            device.pushUsed(head, 0);
            return head;
        }

        /** Device consumes one available chain and returns it: the result of its {@code flushUsed()}. */
        public boolean serveOne() {
            popAndPush();
            return device.flushUsed();
        }

        /** Driver reaps exactly the given tokens, in order, and then finds nothing more. */
        public void reap(Object... tokens) {
            for (Object token : tokens) {
                assertEquals(token, driver.pollUsed());
            }
            assertNull(driver.pollUsed());
        }

        /** One buffer through the whole cycle: add, kick, pop, push, flush, reap. */
        public Trip roundTrip(Object token) {
            add(token, 1, 1);
            boolean kicked = driver.kick();
            boolean notified = serveOne();
            reap(token);
            assertEquals(0, driver.inFlight());
            return new Trip(kicked, notified);
        }

        @Override
        public void close() {
            arena.close();
        }
    }

    /**
     * A device queue alone over a ring that the test writes byte by byte, playing a hostile driver. The guest
     * memory ({@link #GUEST_BYTES}, ring areas at guest address 0) sits between two canary zones of a larger
     * segment, so any access outside the guest memory would show.
     */
    public static final class HostileRing implements AutoCloseable {
        public static final long GUEST_BYTES = 64 * 1024;
        public static final long CANARY_BYTES = 4096;
        public static final byte CANARY = (byte) 0xA5;
        /** Guest address of a data area for buffer elements. */
        public static final long DATA = 16 * 1024;
        /** Guest address of an area for indirect tables. */
        public static final long TABLES = 32 * 1024;

        public final Arena arena;
        public final MemorySegment outer;
        /** The guest memory (region 0); guest address = offset. */
        public final MemorySegment memory;
        /** Region 1 at guest address {@link #GUEST_BYTES}, or null for a one-region memory. */
        public final MemorySegment second;
        public final GuestMemory guest;
        public final SplitRingAreas areas;
        public final AvailRing avail;
        public final DeviceQueue device;
        private int availIdx;

        private HostileRing(int queueSize, DeviceOptions options, boolean twoRegions) {
            if (SplitRingAreas.contiguousBytes(queueSize) > DATA) {
                throw new IllegalArgumentException("queue size " + queueSize + " too large for this fixture");
            }
            arena = Arena.ofConfined();
            outer = allocate(arena, CANARY_BYTES + GUEST_BYTES + CANARY_BYTES);
            outer.asSlice(0, CANARY_BYTES).fill(CANARY);
            outer.asSlice(CANARY_BYTES + GUEST_BYTES).fill(CANARY);
            memory = outer.asSlice(CANARY_BYTES, GUEST_BYTES);
            if (twoRegions) {
                second = allocate(arena, GUEST_BYTES);
                guest = GuestMemory.builder().region(0, memory).region(GUEST_BYTES, second).build();
            } else {
                second = null;
                guest = GuestMemory.of(memory, 0);
            }
            areas = SplitRingAreas.carve(memory, queueSize);
            avail = new AvailRing(areas.availRing(), queueSize);
            device = DeviceQueue.over(areas, guest, options, new CountingNotifier());
        }

        public static HostileRing open(int queueSize, DeviceOptions options) {
            return new HostileRing(queueSize, options, false);
        }

        public static HostileRing openTwoRegions(int queueSize, DeviceOptions options) {
            return new HostileRing(queueSize, options, true);
        }

        /** Writes descriptor {@code index} of the main descriptor table. */
        public void desc(int index, long addr, int len, int flags, int next) {
            Descriptors.write(areas.descTable(), 0, index, addr, len, flags, next);
        }

        /** Writes descriptor {@code index} of an indirect table at guest address {@code table}. */
        public void indirect(long table, int index, long addr, int len, int flags, int next) {
            Descriptors.write(memory, table, index, addr, len, flags, next);
        }

        /** Puts {@code head} in the next available ring slot and publishes it by bumping avail.idx. */
        public void makeAvailable(int head) {
            avail.entry(availIdx & (avail.queueSize() - 1), head);
            availIdx = (availIdx + 1) & 0xFFFF;
            avail.idxRelease(availIdx);
        }

        /** Stores avail.idx directly, as a driver that moves it arbitrarily would. */
        public void setAvailIdx(int idx) {
            availIdx = idx & 0xFFFF;
            avail.idxRelease(availIdx);
        }

        /** Whether the bytes just below and just above the guest memory still hold the canary pattern. */
        public boolean canariesIntact() {
            for (long i = 0; i < outer.byteSize(); i++) {
                if ((i < CANARY_BYTES || i >= CANARY_BYTES + GUEST_BYTES) && outer.get(ValueLayout.JAVA_BYTE, i) != CANARY) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public void close() {
            arena.close();
        }
    }
}
