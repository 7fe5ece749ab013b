package io.virtio4j.bench;

import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.notify.IdleWait;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;

/**
 * The driver side of a benchmark run: adds up to {@code batch} buffers, kicks, reaps, and waits (spin, sleep
 * on used-buffer notifications, or both) only when it could do neither.
 */
final class DriverLoop {
    static final long WAIT_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    /** What the driver measured. */
    record Result(long completed, long elapsedNanos, long cpuNanos, long allocatedBytes, long spurious, String pinError) {
    }

    private final BenchConfig cfg;
    private final BenchLayout layout;
    private final MemorySegment mem;
    private final DriverQueue driver;
    private final Notifier call;

    DriverLoop(BenchLayout layout, MemorySegment mem, DriverQueue driver, Notifier call) {
        this.cfg = layout.cfg();
        this.layout = layout;
        this.mem = mem;
        this.driver = driver;
        this.call = call;
    }

    /** Moves {@code cfg.bufs()} buffers, then asks the device to stop. */
    Result run(Runnable wakeDevice) throws InterruptedException {
        String pinError = Pinning.pin(cfg.driverCpu(), "driver");
        com.sun.management.ThreadMXBean tmx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        int elements = cfg.chain();
        ScatterGather sg = new ScatterGather(elements);
        Integer[] tokens = new Integer[cfg.ringSize()];
        int[] freeSlots = new int[cfg.ringSize()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i;
            freeSlots[i] = i;
        }
        int freeCount = tokens.length;
        long[] expect = cfg.verify() ? new long[tokens.length] : null;
        long total = cfg.bufs();
        int batch = cfg.batch();
        int needed = cfg.indirect() ? 1 : elements;
        driver.disableCallbacks();

        long cpu0 = tmx.getCurrentThreadCpuTime();
        long alloc0 = tmx.getCurrentThreadAllocatedBytes();
        long t0 = System.nanoTime();
        long started = 0;
        long done = 0;
        long spurious = 0;
        IdleWait idle = new IdleWait(cfg.mode(), cfg.hybridSpinNanos());
        boolean woke = false;
        try {
            while (done < total) {
                int added = 0;
                while (added < batch && started < total && freeCount > 0 && driver.freeDescriptors() >= needed) {
                    int slot = freeSlots[--freeCount];
                    sg.clear();
                    for (int e = 0; e < elements; e++) {
                        if (elements == 1 || e < elements - 1) {
                            sg.readable(layout.element(slot, e), cfg.bufSize());
                        } else {
                            sg.writable(layout.element(slot, e), cfg.bufSize());
                        }
                    }
                    if (expect != null) {
                        mem.set(ValueLayout.JAVA_LONG_UNALIGNED, layout.element(slot, 0), started);
                        expect[slot] = started;
                    }
                    driver.add(sg, tokens[slot]);
                    started++;
                    added++;
                }
                if (added > 0) {
                    driver.kick();
                }
                int reaped = 0;
                Object t;
                while ((t = driver.pollUsed()) != null) {
                    int slot = (Integer) t;
                    if (expect != null) {
                        checkEcho(slot, expect[slot]);
                    }
                    freeSlots[freeCount++] = slot;
                    reaped++;
                }
                done += reaped;
                if (added != 0 || reaped != 0) {
                    idle.busy();
                    woke = false;
                    continue;
                }
                if (woke) {
                    spurious++; // a notification woke us and there was nothing to do
                    woke = false;
                }
                if (idle.spin()) {
                    continue;
                }
                boolean workPending = cfg.delayedInterrupt() ? driver.enableCallbacksDelayedOrFindPending()
                        : driver.enableCallbacksOrFindPending();
                if (!workPending) {
                    woke = call.await(WAIT_SLICE_NANOS);
                }
                driver.disableCallbacks();
                idle.busy();
            }
        } finally {
            layout.requestStop(mem);
            wakeDevice.run();
        }
        long elapsed = System.nanoTime() - t0;
        return new Result(done, elapsed, tmx.getCurrentThreadCpuTime() - cpu0,
                tmx.getCurrentThreadAllocatedBytes() - alloc0, spurious, pinError);
    }

    private void checkEcho(int slot, long expected) {
        if (cfg.chain() > 1) {
            long echoed = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, layout.element(slot, cfg.chain() - 1));
            if (echoed != expected + 1 || driver.lastUsedLength() != 8) {
                throw new BenchmarkFailedException("buffer " + expected + " came back with " + echoed
                        + " (length " + driver.lastUsedLength() + "), expected " + (expected + 1) + " (length 8)", null);
            }
        }
    }
}
