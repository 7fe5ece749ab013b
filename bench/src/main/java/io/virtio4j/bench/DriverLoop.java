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
 * The driver side of a benchmark run. {@link TrafficPattern#STREAM}: adds up to {@code batch} buffers, kicks, reaps
 * (after every round, or only after a round short of a batch: {@link Reclaim}), and waits (spin, sleep on used-buffer
 * notifications, or both) only when it could do neither.
 * {@link TrafficPattern#RR}: one transaction at a time, each request's round trip recorded and its answer checked.
 */
final class DriverLoop {
    static final long WAIT_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    /** What the driver measured; {@code roundTrips} only for request-response, else null. */
    record Result(long completed, long elapsedNanos, long cpuNanos, long allocatedBytes, long spurious, String pinError,
                  LatencyHistogram roundTrips) {
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
        if (cfg.pattern() == TrafficPattern.RR) {
            return requestResponse(wakeDevice);
        }
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
        boolean eagerReclaim = cfg.reclaim() == Reclaim.EAGER;
        driver.disableCallbacks();

        // made before the measured part, which allocates nothing
        IdleWait idle = new IdleWait(cfg.mode(), cfg.hybridSpinNanos());
        long cpu0 = tmx.getCurrentThreadCpuTime();
        long alloc0 = tmx.getCurrentThreadAllocatedBytes();
        long t0 = System.nanoTime();
        long started = 0;
        long done = 0;
        long spurious = 0;
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
                // Reclaim.LAZY: take buffers back only when this round came up short of a batch (no room left, or
                // nothing left to start); a round that added a whole batch leaves used.idx alone, so the device
                // stores it with no load of ours pulling the line away in between (see Reclaim)
                int reaped = 0;
                Object t;
                while ((eagerReclaim || added < batch) && (t = driver.pollUsed()) != null) {
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
        // read before the CPU time, whose reading allocates: the run itself allocates nothing
        long allocated = tmx.getCurrentThreadAllocatedBytes() - alloc0;
        return new Result(done, elapsed, tmx.getCurrentThreadCpuTime() - cpu0, allocated, spurious, pinError, null);
    }

    /**
     * {@code cfg.bufs()} transactions with one buffer in flight (netperf's TCP_RR on one ring): write request
     * {@code n} (its sequence number, then bytes derived from it), add it, kick, wait for the answer (spin, sleep on
     * used-buffer notifications, or both), take it back, check that it echoes the request, repeat. The round trip
     * runs from just before the add to just after the reap, so it holds both sides' ordering points and the
     * device's echo, and neither the request's writing nor the answer's check. Then asks the device to stop.
     */
    private Result requestResponse(Runnable wakeDevice) throws InterruptedException {
        String pinError = Pinning.pin(cfg.driverCpu(), "driver");
        com.sun.management.ThreadMXBean tmx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        int elements = cfg.chain();
        int size = cfg.bufSize();
        ScatterGather sg = new ScatterGather(elements);
        for (int e = 0; e < elements; e++) {
            if (e < elements - 1) {
                sg.readable(layout.element(0, e), size);
            } else {
                sg.writable(layout.element(0, e), size);
            }
        }
        Integer token = 0;
        long request = layout.element(0, 0);
        long answer = layout.element(0, elements - 1);
        LatencyHistogram roundTrips = new LatencyHistogram();
        long total = cfg.bufs();
        driver.disableCallbacks();

        // made before the measured part, which allocates nothing
        IdleWait idle = new IdleWait(cfg.mode(), cfg.hybridSpinNanos());
        long cpu0 = tmx.getCurrentThreadCpuTime();
        long alloc0 = tmx.getCurrentThreadAllocatedBytes();
        long t0 = System.nanoTime();
        long done = 0;
        long spurious = 0;
        boolean woke = false;
        try {
            while (done < total) {
                long expected = writeRequest(mem, request, size, done);
                long sent = System.nanoTime();
                driver.add(sg, token);
                driver.kick();
                while (driver.pollUsed() == null) {
                    if (woke) {
                        spurious++; // a notification woke us and the answer was not there
                        woke = false;
                    }
                    if (idle.spin()) {
                        continue;
                    }
                    boolean answered = cfg.delayedInterrupt() ? driver.enableCallbacksDelayedOrFindPending()
                            : driver.enableCallbacksOrFindPending();
                    if (!answered) {
                        woke = call.await(WAIT_SLICE_NANOS);
                    }
                    driver.disableCallbacks();
                    idle.busy();
                }
                roundTrips.record(System.nanoTime() - sent);
                woke = false;
                idle.busy();
                checkAnswer(mem, answer, size, driver.lastUsedLength(), done, expected);
                done++;
            }
        } finally {
            layout.requestStop(mem);
            wakeDevice.run();
        }
        long elapsed = System.nanoTime() - t0;
        // read before the CPU time, whose reading allocates: the run itself allocates nothing
        long allocated = tmx.getCurrentThreadAllocatedBytes() - alloc0;
        return new Result(done, elapsed, tmx.getCurrentThreadCpuTime() - cpu0, allocated, spurious, pinError, roundTrips);
    }

    /**
     * Writes request {@code seq} of {@code size} bytes (at least 8) at guest address {@code at}: the sequence number,
     * so no two consecutive requests are alike, then words derived from it. Returns its checksum.
     */
    static long writeRequest(MemorySegment mem, long at, int size, long seq) {
        mem.set(ValueLayout.JAVA_LONG_UNALIGNED, at, seq);
        int o = 8;
        for (; o + 8 <= size; o += 8) {
            mem.set(ValueLayout.JAVA_LONG_UNALIGNED, at + o, (seq + o) * 0x9E3779B97F4A7C15L);
        }
        for (; o < size; o++) {
            mem.set(ValueLayout.JAVA_BYTE, at + o, (byte) (seq + o));
        }
        return checksum(mem, at, size);
    }

    /** A 64-bit checksum of {@code size} bytes at {@code at} (FNV-1a over words, then over the bytes left). */
    static long checksum(MemorySegment mem, long at, int size) {
        long h = 0xCBF29CE484222325L;
        int o = 0;
        for (; o + 8 <= size; o += 8) {
            h = (h ^ mem.get(ValueLayout.JAVA_LONG_UNALIGNED, at + o)) * 0x100000001B3L;
        }
        for (; o < size; o++) {
            h = (h ^ mem.get(ValueLayout.JAVA_BYTE, at + o)) * 0x100000001B3L;
        }
        return h;
    }

    /**
     * The answer to request {@code seq} at {@code at} must be the request echoed whole: {@code size} bytes used, with
     * the request's checksum {@code expected} (an answer left from request {@code seq - 1} differs in its first word).
     */
    static void checkAnswer(MemorySegment mem, long at, int size, long usedLength, long seq, long expected) {
        long sum = checksum(mem, at, size);
        if (usedLength != size || sum != expected) {
            throw new BenchmarkFailedException("transaction " + seq + " was answered with " + usedLength
                    + " bytes, checksum " + Long.toHexString(sum) + " (sequence "
                    + mem.get(ValueLayout.JAVA_LONG_UNALIGNED, at) + "), expected " + size + " bytes, checksum "
                    + Long.toHexString(expected), null);
        }
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
