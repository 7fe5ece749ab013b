package io.virtio4j.bench;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.SplitDeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.SplitDriverQueue;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.os.Affinity;
import io.virtio4j.os.LinuxException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

/**
 * The in-process ring benchmark in the manner of Linux {@code tools/virtio/virtio_test} and {@code ringtest}:
 * a driver thread and a device thread, each optionally pinned to a CPU, hammer one split ring laid out in one
 * shared native segment (guest address = offset in the segment).
 *
 * <p>The driver adds up to {@code batch} buffers, kicks, reaps what came back, and waits (spin, sleep or
 * both) only when it could do neither. The device pops, pushes used, publishes every {@code batch} buffers
 * or when it runs dry, and waits only when the ring is empty.
 */
public final class RingBenchmark {
    private static final long WAIT_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long WATCHDOG_NANOS = TimeUnit.MINUTES.toNanos(5);

    private final BenchConfig cfg;

    public RingBenchmark(BenchConfig cfg) {
        this.cfg = cfg;
    }

    private static final int PROBE_ROUNDS = 20_000;

    /** Runs once, with a cache-line ping-pong probe just before and after, and returns what it measured. */
    public RunResult run() throws InterruptedException {
        try (Arena arena = Arena.ofShared()) {
            Setup s = new Setup(cfg, arena);
            double before = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
            RunResult r = s.execute();
            double after = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
            return r.withProbes(before, after);
        }
    }

    /** Everything one run needs; a fresh instance per run so no state leaks between runs. */
    private static final class Setup {
        final BenchConfig cfg;
        final MemorySegment mem;
        final SplitDriverQueue driver;
        final SplitDeviceQueue device;
        final Notifier kick = new ParkingNotifier();
        final Notifier call = new ParkingNotifier();
        final long poolBase;
        final int elements;
        final CyclicBarrier start = new CyclicBarrier(2);
        volatile boolean stop;

        // results written by each thread before it ends; read after join
        long elapsed;
        long driverCpu;
        long deviceCpu;
        long driverAlloc;
        long deviceAlloc;
        long driverSpurious;
        long deviceSpurious;
        long completed;
        String driverPin;
        String devicePin;
        volatile Throwable failure;

        Setup(BenchConfig cfg, Arena arena) {
            this.cfg = cfg;
            int q = cfg.ringSize();
            elements = cfg.chain();
            long ringBytes = align(SplitRingAreas.contiguousBytes(q));
            long indirectBytes = cfg.indirect() ? align(DriverOptions.indirectTablesBytes(q, elements)) : 0;
            long poolBytes = (long) q * elements * cfg.bufSize();
            mem = arena.allocate(ringBytes + indirectBytes + poolBytes, 4096);
            SplitRingAreas areas = SplitRingAreas.carve(mem.asSlice(0, ringBytes), q);
            poolBase = ringBytes + indirectBytes;

            DriverOptions dopt = DriverOptions.defaults()
                    .withOrdering(cfg.barriers())
                    .withEventIdx(cfg.eventIdx())
                    .withPublication(cfg.availPublish());
            if (cfg.indirect()) {
                dopt = dopt.withIndirect(mem.asSlice(ringBytes, indirectBytes), ringBytes, elements, 2);
            }
            driver = new SplitDriverQueue(areas, dopt, kick);
            DeviceOptions vopt = DeviceOptions.defaults()
                    .withOrdering(cfg.barriers())
                    .withEventIdx(cfg.eventIdx())
                    .withIndirectDesc(cfg.indirect())
                    .withCachedAvailOnEnable(cfg.cachedAvail());
            device = new SplitDeviceQueue(areas, GuestMemory.of(mem, 0), vopt, call);
        }

        private static long align(long v) {
            return (v + 4095) & ~4095L;
        }

        RunResult execute() throws InterruptedException {
            long gcBefore = gcCount();
            Thread dev = new Thread(this::deviceMain, "virtio4j-device");
            Thread drv = new Thread(this::driverMain, "virtio4j-driver");
            dev.start();
            drv.start();
            drv.join(TimeUnit.NANOSECONDS.toMillis(WATCHDOG_NANOS));
            if (drv.isAlive()) {
                stop = true;
                kick.signal();
                call.signal();
                drv.interrupt();
                dev.interrupt();
                drv.join(5000);
                dev.join(5000);
                throw new BenchmarkStalledException("driver did not finish within " + WATCHDOG_NANOS / 1_000_000_000
                        + " s: completed " + completed + " of " + cfg.bufs() + " buffers; driver "
                        + driver.counters() + "; device " + device.counters());
            }
            dev.join();
            if (failure != null) {
                throw new BenchmarkFailedException("benchmark thread failed: " + failure, failure);
            }
            String pinning = driverPin == null && devicePin == null ? "pinned"
                    : (driverPin != null ? driverPin : "") + (devicePin != null ? " " + devicePin : "");
            if (cfg.driverCpu() < 0 && cfg.deviceCpu() < 0) {
                pinning = "not pinned";
            }
            return new RunResult(completed, elapsed, driverCpu, deviceCpu, driver.counters(), device.counters(),
                    driverSpurious, deviceSpurious, gcCount() - gcBefore, driverAlloc + deviceAlloc, pinning, Double.NaN, Double.NaN);
        }

        private static String pin(int cpu, String who) {
            if (cpu < 0) {
                return null;
            }
            try {
                Affinity.pinCurrentThread(cpu);
                return null;
            } catch (LinuxException | IllegalArgumentException e) {
                return who + " not pinned (" + e.getMessage() + ")";
            }
        }

        private void driverMain() {
            try {
                driverPin = pin(cfg.driverCpu(), "driver");
                com.sun.management.ThreadMXBean tmx = threadBean();
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
                int bufSize = cfg.bufSize();
                NotificationMode mode = cfg.mode();
                driver.disableCallbacks();

                start.await();
                long cpu0 = tmx.getCurrentThreadCpuTime();
                long alloc0 = tmx.getCurrentThreadAllocatedBytes();
                long t0 = System.nanoTime();
                long started = 0;
                long done = 0;
                long spurious = 0;
                long idleSince = 0;
                boolean woke = false;
                while (done < total) {
                    int added = 0;
                    while (added < batch && started < total && freeCount > 0 && driver.freeDescriptors() >= elementsNeeded()) {
                        int slot = freeSlots[--freeCount];
                        long base = poolBase + (long) slot * elements * bufSize;
                        sg.clear();
                        for (int e = 0; e < elements; e++) {
                            long a = base + (long) e * bufSize;
                            if (elements == 1 || e < elements - 1) {
                                sg.readable(a, bufSize);
                            } else {
                                sg.writable(a, bufSize);
                            }
                        }
                        if (expect != null) {
                            mem.set(ValueLayout.JAVA_LONG_UNALIGNED, base, started);
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
                        idleSince = 0;
                        woke = false;
                        continue;
                    }
                    if (woke) {
                        spurious++; // a notification woke us and there was nothing to do
                        woke = false;
                    }
                    if (mode == NotificationMode.POLL) {
                        Thread.onSpinWait();
                        continue;
                    }
                    if (mode == NotificationMode.HYBRID) {
                        long now = System.nanoTime();
                        if (idleSince == 0) {
                            idleSince = now;
                        }
                        if (now - idleSince < cfg.hybridSpinNanos()) {
                            Thread.onSpinWait();
                            continue;
                        }
                    }
                    boolean safeToSleep = cfg.delayedInterrupt() ? driver.enableCallbacksDelayed() : driver.enableCallbacks();
                    if (safeToSleep) {
                        woke = call.await(WAIT_SLICE_NANOS);
                    }
                    driver.disableCallbacks();
                    idleSince = 0;
                }
                elapsed = System.nanoTime() - t0;
                driverCpu = tmx.getCurrentThreadCpuTime() - cpu0;
                driverAlloc = tmx.getCurrentThreadAllocatedBytes() - alloc0;
                driverSpurious = spurious;
                completed = done;
            } catch (Throwable e) {
                failure = e;
            } finally {
                stop = true;
                kick.signal();
            }
        }

        private int elementsNeeded() {
            return cfg.indirect() ? 1 : elements;
        }

        private void checkEcho(int slot, long expected) {
            long base = poolBase + (long) slot * elements * cfg.bufSize();
            if (elements > 1) {
                long echoed = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, base + (long) (elements - 1) * cfg.bufSize());
                if (echoed != expected + 1 || driver.lastUsedLength() != 8) {
                    throw new BenchmarkFailedException("buffer " + expected + " came back with " + echoed
                            + " (length " + driver.lastUsedLength() + "), expected " + (expected + 1) + " (length 8)", null);
                }
            }
        }

        private void deviceMain() {
            try {
                devicePin = pin(cfg.deviceCpu(), "device");
                com.sun.management.ThreadMXBean tmx = threadBean();
                MemorySegment scratch = Arena.ofAuto().allocate(8, 8);
                int batch = cfg.batch();
                boolean toggle = cfg.toggleNotify();
                boolean verify = cfg.verify();
                NotificationMode mode = cfg.mode();
                device.disableKicks();

                start.await();
                long cpu0 = tmx.getCurrentThreadCpuTime();
                long alloc0 = tmx.getCurrentThreadAllocatedBytes();
                int pending = 0;
                long spurious = 0;
                long idleSince = 0;
                boolean woke = false;
                while (true) {
                    if (toggle) {
                        device.enableKicks();
                        device.disableKicks();
                    }
                    DescriptorChain c = device.pop();
                    if (c != null) {
                        long written = 0;
                        if (verify) {
                            c.gather(0, scratch, 0, 8);
                            scratch.set(ValueLayout.JAVA_LONG, 0, scratch.get(ValueLayout.JAVA_LONG, 0) + 1);
                            written = c.writableCount() > 0 ? c.scatter(0, scratch, 0, 8) : 0;
                        }
                        device.pushUsed(c.head(), written);
                        if (++pending >= batch) {
                            device.flushUsed();
                            pending = 0;
                        }
                        idleSince = 0;
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
                    if (stop) {
                        break;
                    }
                    if (mode == NotificationMode.POLL) {
                        Thread.onSpinWait();
                        continue;
                    }
                    if (mode == NotificationMode.HYBRID) {
                        long now = System.nanoTime();
                        if (idleSince == 0) {
                            idleSince = now;
                        }
                        if (now - idleSince < cfg.hybridSpinNanos()) {
                            Thread.onSpinWait();
                            continue;
                        }
                    }
                    if (!device.enableKicks()) {
                        woke = kick.await(WAIT_SLICE_NANOS) && !stop;
                    }
                    device.disableKicks();
                    idleSince = 0;
                }
                deviceCpu = tmx.getCurrentThreadCpuTime() - cpu0;
                deviceAlloc = tmx.getCurrentThreadAllocatedBytes() - alloc0;
                deviceSpurious = spurious;
            } catch (Throwable e) {
                failure = e;
                call.signal();
            }
        }
    }

    private static com.sun.management.ThreadMXBean threadBean() {
        return (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    }

    private static long gcCount() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }
}
