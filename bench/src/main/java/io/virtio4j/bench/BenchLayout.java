package io.virtio4j.bench;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Where everything of one benchmark run lives in its one shared segment (guest address = offset): the ring
 * areas (split or packed, as configured), the indirect tables, the buffer pool, a control word the driver
 * sets to tell the device to stop, and with {@link BenchConfig#inflight} the device queue's inflight region (the
 * place of vhost-user's inflight area, which a front-end maps too; only the device touches it), and with
 * {@link BenchConfig#dirtyLog} the dirty-page log (the place of the log a front-end hands over with SET_LOG_BASE,
 * with a bit for every page before it; the device marks it, the driver side counts it after the run). The same
 * layout serves two threads over an arena and two processes over a memfd.
 *
 * @param inflightOffset where the inflight region starts (on a page of its own), or -1 without one
 * @param dirtyLogOffset where the dirty log starts (on a page of its own, the last thing in the segment), or -1
 *                       without one; the log covers guest memory [0, dirtyLogOffset)
 */
public record BenchLayout(BenchConfig cfg, long ringBytes, long indirectBytes, long poolBase, long controlOffset,
                          long inflightOffset, long dirtyLogOffset, long totalBytes) {

    private static final VarHandle STOP = ValueLayout.JAVA_INT.varHandle();
    /** Ring, indirect tables, pool, control word, inflight region and dirty log each start on a page of their own. */
    private static final long PAGE = 4096;

    public static BenchLayout of(BenchConfig cfg) {
        int q = cfg.ringSize();
        long ring = RingSegment.dataOffset(cfg.ring(), q, PAGE);
        long indirect = cfg.indirect() ? align(DriverOptions.indirectTablesBytes(q, cfg.chain())) : 0;
        long pool = align((long) q * cfg.chain() * cfg.bufSize());
        long control = ring + indirect + pool;
        long end = control + PAGE;
        long inflight = -1;
        if (cfg.inflight()) {
            inflight = end;
            end += align(InflightLayout.queueRegionBytes(cfg.ring(), q));
        }
        long log = -1;
        if (cfg.dirtyLog()) {
            log = end;
            end += align(DirtyLog.bytesCovering(log));
        }
        return new BenchLayout(cfg, ring, indirect, ring + indirect, control, inflight, log, end);
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
     * The device side over {@code mem}; with {@link BenchConfig#dirtyLog} logging its ring writes in the layout's
     * dirty log; with {@link BenchConfig#inflight} restarted over its inflight region, which is fresh (all zeroes: a
     * new arena allocation or memfd), so nothing is resubmitted and the queue starts where a new one does.
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
        if (cfg.dirtyLog()) {
            // before the restart, as the vhost back-end does: a packed restart over an inflight region may write
            // descriptors
            logRingWrites(device, ring, dirtyLog(mem));
        }
        if (cfg.inflight()) {
            device.restart(QueueState.INITIAL, mem.asSlice(inflightOffset,
                    InflightLayout.queueRegionBytes(cfg.ring(), cfg.ringSize())));
        }
        return device;
    }

    /** {@code mem} as the device's guest memory (guest address = offset), for marking what it writes in buffers. */
    public GuestMemory guestMemory(MemorySegment mem) {
        return ring(mem).guestMemory();
    }

    /**
     * The dirty log in {@code mem} (a flyweight: every call over the same memory sees the same bits), or null without
     * {@link BenchConfig#dirtyLog}. A fresh segment holds a clear log.
     */
    public DirtyLog dirtyLog(MemorySegment mem) {
        if (dirtyLogOffset < 0) {
            return null;
        }
        long bytes = DirtyLog.bytesCovering(dirtyLogOffset);
        // the slice ends on a page boundary: whole 32-bit words around the log, as DirtyLog's atomic OR needs
        return new DirtyLog(mem.asSlice(dirtyLogOffset, align(bytes)), 0, bytes);
    }

    /** Pages marked in {@code mem}'s dirty log; 0 without one. */
    public long dirtyPages(MemorySegment mem) {
        DirtyLog log = dirtyLog(mem);
        return log == null ? 0 : log.dirtyPages();
    }

    /**
     * Has {@code device}, running over {@code ring} (guest address = offset in its segment), log its writes into its
     * own ring areas in {@code log}, at the guest addresses a vhost-user front-end gives for them
     * ({@code DeviceQueue.logUsed}): split, the used ring; packed, the device event area and the descriptor ring.
     */
    public static void logRingWrites(DeviceQueue device, RingSegment ring, DirtyLog log) {
        long base = ring.segment().address();
        switch (ring.areas()) {
            case SplitRingAreas split -> device.logUsed(log, split.usedRing().address() - base, -1);
            case PackedRingAreas packed -> device.logUsed(log, packed.deviceEvent().address() - base,
                    packed.descRing().address() - base);
        }
    }

    /** Driver: release store, so everything the driver did before is visible to a device that sees it. */
    public void requestStop(MemorySegment mem) {
        STOP.setRelease(mem, controlOffset, 1);
    }

    public boolean stopRequested(MemorySegment mem) {
        return (int) STOP.getAcquire(mem, controlOffset) != 0;
    }
}
