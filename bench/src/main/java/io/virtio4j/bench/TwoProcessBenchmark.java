package io.virtio4j.bench;

import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.vhost.notify.EventFdNotifier;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.os.UnixSocket;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code bench --processes 2}: the driver runs in this JVM, the device in a second JVM ({@link DeviceProcess})
 * started once and reused for every run. Each run's ring and buffers live in a fresh memfd that both map; the
 * kick and call eventfds travel with it over a Unix socket. Same loops, same figures as {@link RingBenchmark}.
 */
public final class TwoProcessBenchmark implements AutoCloseable {
    private static final int PROBE_ROUNDS = 20_000;

    private final Process child;
    private final UnixSocket socket;
    private final Arena io = Arena.ofConfined();
    private final MemorySegment buf = io.allocate(4096);

    private TwoProcessBenchmark(Process child, UnixSocket socket) {
        this.child = child;
        this.socket = socket;
    }

    /** Starts the device JVM and connects to it. */
    public static TwoProcessBenchmark start() throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("virtio4j-bench");
        Path path = dir.resolve("device.sock");
        String java = ProcessHandle.current().info().command()
                .orElseThrow(() -> new IllegalStateException("cannot tell which java runs this JVM"));
        Process child = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), DeviceProcess.class.getName(), path.toString()))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectOutput(ProcessBuilder.Redirect.INHERIT)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        try {
            while (true) {
                try {
                    return new TwoProcessBenchmark(child, UnixSocket.connect(path));
                } catch (LinuxException e) {
                    if (!child.isAlive() || System.nanoTime() > deadline) {
                        child.destroyForcibly();
                        throw new BenchmarkFailedException("device process did not listen on " + path
                                + (child.isAlive() ? " within 60 s" : ", it exited with " + child.exitValue()), e);
                    }
                    Thread.sleep(20);
                }
            }
        } finally {
            Files.deleteIfExists(path);
            Files.deleteIfExists(dir);
        }
    }

    /**
     * Refuses a configuration no run in two processes takes: a caller checks before {@link #start()}, so that it does
     * not start the device's JVM (and run other configurations) only to be refused later.
     */
    public static void check(BenchConfig cfg) {
        if (cfg.flightRecording()) {
            // a recording here would watch the driver's JVM only, not the device's: a figure that looks like the
            // whole cost and is half of it
            throw new InvalidBenchOptionException("%s runs in process only, not with %s 2 (the device's JVM would run "
                    + "unrecorded)", "flightRecording", "processes");
        }
    }

    /** One run with the driver here and the device in the other process. */
    public RunResult run(BenchConfig cfg) throws InterruptedException {
        check(cfg);
        double before = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
        BenchLayout layout = BenchLayout.of(cfg);
        long gcBefore = RingBenchmark.gcCount();
        DriverLoop.Result d;
        Map<String, String> dev;
        DriverQueue driver;
        long dirtyPages;
        try (Arena arena = Arena.ofShared();
             FileDescriptor memfd = Memfd.create("virtio4j-bench", layout.totalBytes());
             EventFdNotifier kick = new EventFdNotifier();
             EventFdNotifier call = new EventFdNotifier()) {
            MemorySegment mem = Mmap.mapShared(memfd, layout.totalBytes(), arena);
            driver = layout.driverQueue(mem, kick); // zeroes the ring headers before the device looks
            DeviceProcess.Wire.send(socket, buf, cfg.toMap(), memfd, kick.eventFd().fileDescriptor(),
                    call.eventFd().fileDescriptor());
            Map<String, String> ready = DeviceProcess.Wire.receive(socket, buf, new FileDescriptor[0]);
            if (ready == null || !ready.containsKey("ready")) {
                throw new BenchmarkFailedException("device process did not get ready: " + ready, null);
            }
            d = new DriverLoop(layout, mem, driver, call).run(kick::signal);
            dev = DeviceProcess.Wire.receive(socket, buf, new FileDescriptor[0]);
            if (dev == null) {
                throw new BenchmarkFailedException("device process went away during the run", null);
            }
            dirtyPages = layout.dirtyPages(mem); // the device process marked the log in the shared memfd
        }
        double after = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
        String devPin = "ok".equals(dev.get("pin")) ? null : dev.get("pin").replace('_', ' ');
        return new RunResult(d.completed(), d.elapsedNanos(), d.cpuNanos(), Long.parseLong(dev.get("cpu")),
                driver.counters(), DeviceProcess.counters(dev), d.spurious(), Long.parseLong(dev.get("spurious")),
                RingBenchmark.gcCount() - gcBefore, d.allocatedBytes() + Long.parseLong(dev.get("alloc")),
                Pinning.describe(cfg, d.pinError(), devPin), before, after, dirtyPages, d.roundTrips());
    }

    @Override
    public void close() throws InterruptedException {
        try (io) {
            DeviceProcess.Wire.send(socket, buf, Map.of("exit", "1"));
        } catch (LinuxException e) {
            // the device process is gone already
        } finally {
            socket.close();
            if (!child.waitFor(10, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
    }
}
