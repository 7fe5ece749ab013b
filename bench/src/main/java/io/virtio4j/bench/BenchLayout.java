package io.virtio4j.bench;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.notify.Notifier;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Where everything of one benchmark run lives in its one shared segment (guest address = offset): the ring
 * areas (split or packed, as configured), the indirect tables, the buffer pool, and a control word the driver
 * sets to tell the device to stop. The same layout serves two threads over an arena and two processes over a
 * memfd.
 */
public record BenchLayout(BenchConfig cfg, long ringBytes, long indirectBytes, long poolBase, long controlOffset,
                          long totalBytes) {

    private static final VarHandle STOP = ValueLayout.JAVA_INT.varHandle();
    /** Ring, indirect tables, pool and control word each start on a page of their own. */
    private static final long PAGE = 4096;

    public static BenchLayout of(BenchConfig cfg) {
        int q = cfg.ringSize();
        long ring = RingSegment.dataOffset(cfg.ring(), q, PAGE);
        long indirect = cfg.indirect() ? align(DriverOptions.indirectTablesBytes(q, cfg.chain())) : 0;
        long pool = align((long) q * cfg.chain() * cfg.bufSize());
        long control = ring + indirect + pool;
        return new BenchLayout(cfg, ring, indirect, ring + indirect, control, control + 4096);
    }

    private static long align(long v) {
        return SplitLayout.roundUp(v, PAGE);
    }

    /** Guest address of element {@code e} of pool slot {@code slot}. */
    public long element(int slot, int e) {
        return poolBase + ((long) slot * cfg.chain() + e) * cfg.bufSize();
    }

    private RingSegment ring(MemorySegment mem) {
        return RingSegment.carve(mem, cfg.ring(), cfg.ringSize(), PAGE);
    }

    /** The driver side over {@code mem}; zeroes the ring headers. */
    public DriverQueue driverQueue(MemorySegment mem, Notifier kick) {
        DriverOptions o = DriverOptions.defaults()
                .withOrdering(cfg.barriers())
                .withEventIdx(cfg.eventIdx())
                .withPublication(cfg.availPublish())
                .withInOrder(cfg.inOrder());
        if (cfg.indirect()) {
            o = o.withIndirect(mem.asSlice(ringBytes, indirectBytes), ringBytes, cfg.chain(), 2);
        }
        return DriverQueue.over(ring(mem).areas(), o, kick);
    }

    /** The device side over {@code mem}. */
    public DeviceQueue deviceQueue(MemorySegment mem, Notifier call) {
        DeviceOptions o = DeviceOptions.defaults()
                .withOrdering(cfg.barriers())
                .withEventIdx(cfg.eventIdx())
                .withIndirectDesc(cfg.indirect())
                .withCachedAvailOnEnable(cfg.cachedAvail())
                .withInOrder(cfg.inOrder());
        RingSegment ring = ring(mem);
        return DeviceQueue.over(ring.areas(), ring.guestMemory(), o, call);
    }

    /** Driver: release store, so everything the driver did before is visible to a device that sees it. */
    public void requestStop(MemorySegment mem) {
        STOP.setRelease(mem, controlOffset, 1);
    }

    public boolean stopRequested(MemorySegment mem) {
        return (int) STOP.getAcquire(mem, controlOffset) != 0;
    }
}
