package io.virtio4j.bench;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.notify.Notifier;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Where everything of one benchmark run lives in its one shared segment (guest address = offset): the ring
 * areas (split or packed, as configured), the indirect tables, the buffer pool, a control word the driver
 * sets to tell the device to stop, and with {@link BenchConfig#inflight} the device queue's inflight region (the
 * place of vhost-user's inflight area, which a front-end maps too; only the device touches it). The same layout
 * serves two threads over an arena and two processes over a memfd.
 *
 * @param inflightOffset where the inflight region starts (on a page of its own), or -1 without one
 */
public record BenchLayout(BenchConfig cfg, long ringBytes, long indirectBytes, long poolBase, long controlOffset,
                          long inflightOffset, long totalBytes) {

    private static final VarHandle STOP = ValueLayout.JAVA_INT.varHandle();
    /** Ring, indirect tables, pool, control word and inflight region each start on a page of their own. */
    private static final long PAGE = 4096;

    public static BenchLayout of(BenchConfig cfg) {
        int q = cfg.ringSize();
        long ring = RingSegment.dataOffset(cfg.ring(), q, PAGE);
        long indirect = cfg.indirect() ? align(DriverOptions.indirectTablesBytes(q, cfg.chain())) : 0;
        long pool = align((long) q * cfg.chain() * cfg.bufSize());
        long control = ring + indirect + pool;
        long end = control + PAGE;
        if (!cfg.inflight()) {
            return new BenchLayout(cfg, ring, indirect, ring + indirect, control, -1, end);
        }
        return new BenchLayout(cfg, ring, indirect, ring + indirect, control, end,
                end + align(InflightLayout.queueRegionBytes(cfg.ring(), q)));
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

    /**
     * The device side over {@code mem}; with {@link BenchConfig#inflight} restarted over its inflight region, which is
     * fresh (all zeroes: a new arena allocation or memfd), so nothing is resubmitted and the queue starts where a
     * new one does.
     */
    public DeviceQueue deviceQueue(MemorySegment mem, Notifier call) {
        DeviceOptions o = DeviceOptions.defaults()
                .withOrdering(cfg.barriers())
                .withEventIdx(cfg.eventIdx())
                .withIndirectDesc(cfg.indirect())
                .withCachedAvailOnEnable(cfg.cachedAvail())
                .withInOrder(cfg.inOrder());
        RingSegment ring = ring(mem);
        DeviceQueue device = DeviceQueue.over(ring.areas(), ring.guestMemory(), o, call);
        if (cfg.inflight()) {
            device.restart(QueueState.INITIAL, mem.asSlice(inflightOffset,
                    InflightLayout.queueRegionBytes(cfg.ring(), cfg.ringSize())));
        }
        return device;
    }

    /** Driver: release store, so everything the driver did before is visible to a device that sees it. */
    public void requestStop(MemorySegment mem) {
        STOP.setRelease(mem, controlOffset, 1);
    }

    public boolean stopRequested(MemorySegment mem) {
        return (int) STOP.getAcquire(mem, controlOffset) != 0;
    }
}
