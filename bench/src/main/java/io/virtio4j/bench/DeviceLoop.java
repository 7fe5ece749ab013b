package io.virtio4j.bench;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.notify.IdleWait;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;

/**
 * The device side of a benchmark run: pops, pushes used, publishes every {@code batch} buffers or when the
 * ring runs dry, and waits only when the ring is empty, until the driver sets the stop word. It answers a
 * request-response buffer ({@link TrafficPattern#RR}) by echoing the first {@code bufSize} bytes of its readable part
 * into its writable part, and a {@code --verify} stream buffer by writing back its sequence number plus one. With a
 * dirty log it marks the bytes it writes into a buffer before pushing it, as a vhost-user device does while a
 * migration runs (the queue marks its own ring writes).
 */
final class DeviceLoop {

    /** What the device measured. */
    record Result(long cpuNanos, long allocatedBytes, long spurious, String pinError) {
    }

    private final BenchConfig cfg;
    private final BenchLayout layout;
    private final MemorySegment mem;
    private final DeviceQueue device;
    private final Notifier kick;
    /** The log the device marks its buffer writes in, or null. */
    private final DirtyLog log;
    private final GuestMemory memory;

    DeviceLoop(BenchLayout layout, MemorySegment mem, DeviceQueue device, Notifier kick) {
        this.cfg = layout.cfg();
        this.layout = layout;
        this.mem = mem;
        this.device = device;
        this.kick = kick;
        this.log = layout.dirtyLog(mem);
        this.memory = layout.guestMemory(mem);
    }

    Result run() throws InterruptedException {
        String pinError = Pinning.pin(cfg.deviceCpu(), "device");
        com.sun.management.ThreadMXBean tmx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        boolean echo = cfg.pattern() == TrafficPattern.RR;
        MemorySegment scratch = Arena.ofAuto().allocate(echo ? cfg.bufSize() : 8, 8);
        int batch = cfg.batch();
        boolean toggle = cfg.toggleNotify();
        boolean verify = cfg.verify() && !echo;
        device.disableKicks();

        // made before the measured part, which allocates nothing
        IdleWait idle = new IdleWait(cfg.mode(), cfg.hybridSpinNanos());
        long cpu0 = tmx.getCurrentThreadCpuTime();
        long alloc0 = tmx.getCurrentThreadAllocatedBytes();
        int pending = 0;
        long spurious = 0;
        boolean woke = false;
        while (true) {
            if (toggle) {
                device.enableKicksOrFindPending();
                device.disableKicks();
            }
            DescriptorChain c = device.pop();
            if (c != null) {
                long written = 0;
                if (echo) {
                    long n = c.gather(0, scratch, 0, scratch.byteSize());
                    written = c.scatter(0, scratch, 0, n);
                    if (log != null) {
                        logged(c, written);
                    }
                } else if (verify) {
                    c.gather(0, scratch, 0, 8);
                    scratch.set(ValueLayout.JAVA_LONG, 0, scratch.get(ValueLayout.JAVA_LONG, 0) + 1);
                    written = c.writableCount() > 0 ? c.scatter(0, scratch, 0, 8) : 0;
                    if (log != null) {
                        logged(c, written);
                    }
                }
                device.pushUsed(c.head(), written);
                if (++pending >= batch) {
                    device.flushUsed();
                    pending = 0;
                }
                idle.busy();
                woke = false;
                continue;
            }
            if (woke) {
                spurious++; // a kick woke us and the ring was empty
                woke = false;
            }
            if (pending > 0) {
                device.flushUsed();
                pending = 0;
            }
            if (layout.stopRequested(mem)) {
                break;
            }
            if (idle.spin()) {
                continue;
            }
            if (!device.enableKicksOrFindPending()) {
                woke = kick.await(DriverLoop.WAIT_SLICE_NANOS) && !layout.stopRequested(mem);
            }
            device.disableKicks();
            idle.busy();
        }
        // read before the CPU time, whose reading allocates: the run itself allocates nothing
        long allocated = tmx.getCurrentThreadAllocatedBytes() - alloc0;
        return new Result(tmx.getCurrentThreadCpuTime() - cpu0, allocated, spurious, pinError);
    }

    /**
     * Marks the {@code n} bytes just written into {@code c} in the dirty log, after the write and before the push. A
     * log without a bit for them breaks the queue, as in a vhost-user device (the layout sizes the log for all of
     * the run's memory, so here it would be the layout's bug).
     */
    private void logged(DescriptorChain c, long n) {
        try {
            c.markWritten(log, memory, n);
        } catch (DirtyLogOverflowException e) {
            device.fail(e);
            throw e;
        }
    }
}
