package io.virtio4j.bench;

import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.notify.ParkingNotifier;

import jdk.jfr.Configuration;
import jdk.jfr.Recording;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.text.ParseException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The in-process ring benchmark in the manner of Linux {@code tools/virtio/virtio_test} and {@code ringtest}:
 * a {@link DriverLoop} thread and a {@link DeviceLoop} thread, each optionally pinned to a CPU, hammer one
 * ring (split or packed) laid out by {@link BenchLayout} in one shared native segment.
 */
public final class RingBenchmark {
    static final long WATCHDOG_MILLIS = TimeUnit.MINUTES.toMillis(5);
    private static final int PROBE_ROUNDS = 20_000;

    private RingBenchmark() {
    }

    /**
     * Runs once, with a cache-line ping-pong probe just before and after, and returns what it measured; with
     * {@link BenchConfig#flightRecording} under a JFR recording that starts before the first probe and is closed (its
     * data dropped) after the last: starting one (the first start in a JVM brings the recorder up, which takes a
     * while) and ending it are no part of the figure, only its running is.
     */
    public static RunResult run(BenchConfig cfg) throws InterruptedException {
        try (Recording recording = cfg.flightRecording() ? startRecording(cfg.flightRecordingSettings()) : null) {
            double before = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
            RunResult r = execute(cfg);
            double after = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
            return r.withProbes(before, after);
        }
    }

    /**
     * A recording of {@code settings}: a JDK configuration by name ("default" is what {@code -XX:StartFlightRecording}
     * with no settings uses) or a .jfc file, written to the disk repository as it runs.
     */
    private static Recording startRecording(String settings) {
        Configuration c;
        try {
            c = BenchConfig.JDK_RECORDING_SETTINGS.contains(settings) ? Configuration.getConfiguration(settings)
                    : Configuration.create(java.nio.file.Path.of(settings));
        } catch (IOException e) {
            throw new UncheckedIOException("the JFR configuration " + settings + " cannot be read", e);
        } catch (ParseException e) {
            throw new IllegalArgumentException("the JFR configuration " + settings + " cannot be parsed: "
                    + e.getMessage(), e);
        }
        Recording r = new Recording(c);
        r.setName("virtio4j bench --flight-recording");
        r.setToDisk(true);
        r.start();
        return r;
    }

    private static RunResult execute(BenchConfig cfg) throws InterruptedException {
        BenchLayout layout = BenchLayout.of(cfg);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mem = arena.allocate(layout.totalBytes(), 4096);
            ParkingNotifier kick = new ParkingNotifier();
            ParkingNotifier call = new ParkingNotifier();
            DriverQueue driver = layout.driverQueue(mem, kick);
            DeviceQueue device = layout.deviceQueue(mem, call);
            AtomicReference<DeviceLoop.Result> devResult = new AtomicReference<>();
            AtomicReference<DriverLoop.Result> drvResult = new AtomicReference<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            long gcBefore = gcCount();
            Thread dev = new Thread(() -> {
                try {
                    devResult.set(new DeviceLoop(layout, mem, device, kick).run());
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                    call.signal();
                }
            }, "virtio4j-device");
            Thread drv = new Thread(() -> {
                try {
                    drvResult.set(new DriverLoop(layout, mem, driver, call).run(kick::signal));
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }, "virtio4j-driver");
            dev.start();
            drv.start();
            drv.join(WATCHDOG_MILLIS);
            if (drv.isAlive()) {
                layout.requestStop(mem);
                kick.signal();
                drv.interrupt();
                dev.interrupt();
                drv.join(5000);
                dev.join(5000);
                throw new BenchmarkStalledException("driver did not finish within " + WATCHDOG_MILLIS / 1000
                        + " s; driver " + driver.counters() + "; device " + device.counters());
            }
            dev.join();
            if (failure.get() != null) {
                throw new BenchmarkFailedException("benchmark thread failed: " + failure.get(), failure.get());
            }
            DriverLoop.Result d = drvResult.get();
            DeviceLoop.Result v = devResult.get();
            return new RunResult(d.completed(), d.elapsedNanos(), d.cpuNanos(), v.cpuNanos(), driver.counters(),
                    device.counters(), d.spurious(), v.spurious(), gcCount() - gcBefore,
                    d.allocatedBytes() + v.allocatedBytes(), Pinning.describe(cfg, d.pinError(), v.pinError()),
                    Double.NaN, Double.NaN, layout.dirtyPages(mem), d.roundTrips());
        }
    }

    static long gcCount() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }
}
