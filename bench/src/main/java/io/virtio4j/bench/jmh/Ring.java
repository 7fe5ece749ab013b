package io.virtio4j.bench.jmh;

import io.virtio4j.bench.BenchLayout;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One ring, split or packed, and its buffer pool in one shared native segment (guest address = offset in the
 * segment), as {@code RingBenchmark} lays it out. Benchmarks build the real driver and device queues on it; the
 * split-only ones stand in for the other side through {@link #avail} / {@link #used} (flyweights over the same
 * bytes).
 */
final class Ring implements AutoCloseable {
    /** Every forked JMH JVM needs it (the jar manifest's Enable-Native-Access only covers {@code java -jar}). */
    static final String NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED";
    /** JMH 1.37 calls sun.misc.Unsafe::objectFieldOffset, which JDK 24+ warns about in every fork. */
    static final String JMH_UNSAFE = "--sun-misc-unsafe-memory-access=allow";
    /** Bytes per buffer element; nothing reads or writes the payload (these benchmarks measure ring code). */
    static final int BUF_SIZE = 64;
    /** Where a polling peer has left its split event index: far from every index the benchmark publishes. */
    static final int FAR_EVENT = 0x8000;
    /** The buffer pool starts on its own page, as in {@code RingBenchmark}. */
    private static final long PAGE = 4096;

    final int queueSize;
    final Arena arena = Arena.ofShared();
    final RingSegment segment;
    final MemorySegment mem;
    final RingAreas areas;
    /** Split only (null for packed): flyweights over the split ring's avail and used rings. */
    final AvailRing avail;
    final UsedRing used;
    /** Packed only (null for split): flyweight over the device event suppression structure. */
    final EventSuppression deviceEvent;
    final GuestMemory memory;
    final long poolBase;
    final ParkingNotifier kickNotifier = new ParkingNotifier();
    final ParkingNotifier callNotifier = new ParkingNotifier();
    /** One token per descriptor, boxed once here so that {@code add} never boxes. */
    final Object[] tokens;
    /** The inflight region {@link #device} restarted its queue over, or null. */
    MemorySegment inflightRegion;
    /** The dirty log {@link #device} logs its ring writes in, or null. */
    DirtyLog dirtyLog;

    Ring(RingFormat format, int queueSize) {
        this.queueSize = queueSize;
        RingSegment ring = RingSegment.allocate(arena, format, queueSize, PAGE, (long) queueSize * BUF_SIZE);
        segment = ring;
        mem = ring.segment();
        areas = ring.areas();
        if (areas instanceof SplitRingAreas split) {
            avail = new AvailRing(split.availRing(), queueSize);
            used = new UsedRing(split.usedRing(), queueSize);
            deviceEvent = null;
        } else {
            avail = null;
            used = null;
            deviceEvent = new EventSuppression(((PackedRingAreas) areas).deviceEvent());
        }
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

    /**
     * EVENT_IDX and indirect descriptors on, cached avail index on enable (the defaults); with {@code dirtyLog}
     * logging its ring writes in a fresh dirty log covering the whole segment (as a vhost-user back-end runs it
     * while a migration runs: VHOST_F_LOG_ALL and the ring's log flag); with {@code inflight} restarted over a fresh
     * inflight region of its own (as a vhost-user back-end with INFLIGHT_SHMFD runs it), so that it records every
     * buffer it holds.
     */
    DeviceQueue device(Ordering ordering, boolean inflight, boolean dirtyLog) {
        DeviceQueue q = DeviceQueue.over(areas, memory, DeviceOptions.defaults().withOrdering(ordering), callNotifier);
        if (dirtyLog) {
            long bytes = DirtyLog.bytesCovering(mem.byteSize());
            // 8-byte aligned and a whole number of u64s: the atomic OR's 32-bit words lie in the allocation
            this.dirtyLog = new DirtyLog(arena.allocate(bytes, Long.BYTES), 0, bytes);
            BenchLayout.logRingWrites(q, segment, this.dirtyLog); // before the restart, as the vhost back-end does
        }
        if (inflight) {
            // zeroed by the arena: a fresh region, nothing resubmitted, the queue starts where a new one does
            inflightRegion = arena.allocate(InflightLayout.queueRegionBytes(areas.format(), queueSize),
                    InflightLayout.REGION_ALIGN);
            q.restart(QueueState.INITIAL, inflightRegion);
        }
        return q;
    }

    /**
     * Stand-in for a device that polls with kicks disabled, written straight into the ring: split leaves
     * {@code avail_event} far behind (as a device with EVENT_IDX does), packed sets the device event suppression
     * flags to DISABLE. Either way the driver's kick decision reads "no kick" without signalling the notifier.
     */
    void parkDeviceEvent() {
        if (used != null) {
            used.availEventRelease(FAR_EVENT);
        } else {
            deviceEvent.release(0, PackedLayout.EVENT_F_DISABLE);
        }
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
