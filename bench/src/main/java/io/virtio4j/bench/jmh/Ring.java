package io.virtio4j.bench.jmh;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One split ring and its buffer pool in one shared native segment (guest address = offset in the segment), as
 * {@code RingBenchmark} lays it out. Benchmarks build the real driver and device queues on it, and use
 * {@link #avail} / {@link #used} (flyweights over the same bytes) when they stand in for the other side.
 */
final class Ring implements AutoCloseable {
    /** Every forked JMH JVM needs it (the jar manifest's Enable-Native-Access only covers {@code java -jar}). */
    static final String NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED";
    /** JMH 1.37 calls sun.misc.Unsafe::objectFieldOffset, which JDK 24+ warns about in every fork. */
    static final String JMH_UNSAFE = "--sun-misc-unsafe-memory-access=allow";
    /** Bytes per buffer element; nothing reads or writes the payload (these benchmarks measure ring code). */
    static final int BUF_SIZE = 64;
    /** Where a polling peer has left its event index: far from every index the benchmark publishes. */
    static final int FAR_EVENT = 0x8000;
    /** The buffer pool starts on its own page, as in {@code RingBenchmark}. */
    private static final long PAGE = 4096;

    final int queueSize;
    final Arena arena = Arena.ofShared();
    final MemorySegment mem;
    final SplitRingAreas areas;
    final AvailRing avail;
    final UsedRing used;
    final GuestMemory memory;
    final long poolBase;
    final ParkingNotifier kickNotifier = new ParkingNotifier();
    final ParkingNotifier callNotifier = new ParkingNotifier();
    /** One token per descriptor, boxed once here so that {@code add} never boxes. */
    final Object[] tokens;

    Ring(int queueSize) {
        this.queueSize = queueSize;
        RingSegment ring = RingSegment.allocate(arena, RingFormat.SPLIT, queueSize, PAGE, (long) queueSize * BUF_SIZE);
        mem = ring.segment();
        areas = (SplitRingAreas) ring.areas();
        avail = new AvailRing(areas.availRing(), queueSize);
        used = new UsedRing(areas.usedRing(), queueSize);
        memory = ring.guestMemory();
        poolBase = ring.dataOffset();
        tokens = new Object[queueSize];
        for (int i = 0; i < queueSize; i++) {
            tokens[i] = Integer.valueOf(i);
        }
    }

    /** EVENT_IDX on, no indirect tables (1-element buffers never go indirect). */
    DriverQueue driver(Ordering ordering, AvailPublication publication) {
        DriverOptions o = DriverOptions.defaults().withOrdering(ordering).withPublication(publication);
        return DriverQueue.over(areas, o, kickNotifier);
    }

    /** EVENT_IDX and indirect descriptors on, cached avail index on enable (the defaults). */
    DeviceQueue device(Ordering ordering) {
        return DeviceQueue.over(areas, memory, DeviceOptions.defaults().withOrdering(ordering), callNotifier);
    }

    /** Guest address of the buffer for sequence number {@code i}. */
    long bufAddr(int i) {
        return poolBase + (long) (i & (queueSize - 1)) * BUF_SIZE;
    }

    @Override
    public void close() {
        arena.close();
    }
}
