package io.virtio4j.bench;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.stats.QueueCounters;
import io.virtio4j.devices.net.NetDevice;
import io.virtio4j.devices.net.NetFeatures;
import io.virtio4j.devices.net.NetMode;
import io.virtio4j.devices.net.NetStats;
import io.virtio4j.devices.net.TapPolling;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.TunTap;
import io.virtio4j.os.netlab.Commands;
import io.virtio4j.os.netlab.TapNamespace;
import io.virtio4j.os.netlab.UdpFrames;
import io.virtio4j.os.netlab.UdpTool;
import io.virtio4j.vhost.backend.InProcessBackend;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The measurement behind {@code net-poll-discipline}: receive packets per second of the tap back-end under a
 * flood, for one {@link TapPolling} or another.
 *
 * <p>Set up once: a tap (opened here and kept across runs), moved into a network namespace of its own
 * ({@link TapNamespace}: link-local addresses, a permanent neighbour for the guest), and a load generator in that
 * namespace, a separate JVM ({@link UdpTool} flood) sending one 64-byte UDP datagram after another to the guest
 * as fast as it can through the kernel's real path (UDP socket, IP, neighbour, the tap's transmit and its wait
 * queue). It keeps sending for the whole experiment; between runs the tap's queue fills and the kernel drops.
 *
 * <p>Each run builds a fresh tap-mode {@link NetDevice} over the same tap with the run's discipline, connects a
 * fresh {@link NetDriver} through the vhost-user protocol in process, and lets a guest receiver thread post receive
 * buffers and reap them as fast as it can (sleeping on the used-buffer notification only when the ring has
 * nothing). After a settling time it counts the generator's frames the guest received over the measuring window:
 * that rate is the run's buffers/s. Worker and receiver CPU time, wake-ups, spurious wake-ups, EAGAINs and the
 * tap's drops are recorded alongside.
 *
 * <p>{@link #close()} stops the generator and deletes the namespace and the tap, also after a failure (a
 * shutdown hook covers a JVM that exits first).
 */
public final class NetPollBench implements AutoCloseable {
    private static final String GUEST_MAC = "52:54:00:12:34:56";
    private static final int PORT = 5000;
    private static final int PAYLOAD = 64;
    private static final long SETTLE_NANOS = 300_000_000L;
    /** 256-entry rings, 2048-byte merged receive buffers, EVENT_IDX; no indirect descriptors (none needed). */
    private static final NetDriver.Config BENCH_GUEST = NetDriver.Config.defaults().withIndirect(false);

    private final double windowSeconds;
    private final TunTap tap;
    private final TapNamespace ns;
    private final Process flood;
    private final List<Map<String, Object>> runLog = new ArrayList<>();

    private NetPollBench(double windowSeconds, TunTap tap, TapNamespace ns, Process flood) {
        this.windowSeconds = windowSeconds;
        this.tap = tap;
        this.ns = ns;
        this.flood = flood;
    }

    /**
     * Sets up tap, namespace and generator.
     *
     * @param windowSeconds measuring window of each run
     * @param maxSeconds    the generator stops by itself after this long, whatever happens here
     */
    public static NetPollBench start(double windowSeconds, double maxSeconds) {
        TunTap tap = TunTap.open(Commands.uniqueName('b'));
        TapNamespace ns = null;
        try {
            ns = TapNamespace.create(Commands.uniqueName('x'), tap.name(), GUEST_MAC);
            Process flood = ns.startJava(UdpTool.class, "flood", TapNamespace.GUEST_IP, Integer.toString(PORT),
                    Integer.toString(PAYLOAD), String.format(Locale.ROOT, "%.0f", maxSeconds));
            return new NetPollBench(windowSeconds, tap, ns, flood);
        } catch (RuntimeException e) {
            if (ns != null) {
                ns.close();
            }
            tap.close();
            throw e;
        }
    }

    /** What every run shares, for the report. */
    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("load", "UdpTool flood in network namespace " + ns.name() + ": " + PAYLOAD
                + "-byte UDP payloads (" + (UdpFrames.HEADERS + PAYLOAD) + "-byte frames), one sender, as fast as it can");
        m.put("tap", tap.name() + " (vnet header 12, single queue)");
        m.put("guest", "NetDriver in process: queue size 256, 2048-byte merged receive buffers, EVENT_IDX, receiver thread "
                + "reaping and reposting, sleeping on the call eventfd only when the ring is empty");
        m.put("device", "NetDevice tap mode, 1 queue pair, weight 64, no pinning");
        m.put("window_s", windowSeconds);
        m.put("settle_s", SETTLE_NANOS / 1e9);
        return m;
    }

    /** Per-run net counters, in run order, for the report. */
    public List<Map<String, Object>> runLog() {
        return runLog;
    }

    /** Counts the generator's frames; the receiver thread's own, published once per batch. */
    private static final class Counter implements NetDriver.FrameHandler {
        long frames;
        long other;
        volatile long published;

        @Override
        public void frame(MemorySegment f, long length, int numBuffers) {
            long eth = NetFeatures.HDR_LEN;
            int payload = UdpFrames.udpPayloadLength(f, eth, length - eth, PORT);
            if (payload == PAYLOAD && UdpFrames.hasMagic(f, eth + UdpFrames.HEADERS, payload)) {
                frames++;
            } else {
                other++;
            }
        }
    }

    /** One measured run with {@code polling}. */
    public RunResult run(TapPolling polling) throws InterruptedException {
        NetDevice device = NetDevice.overPorts(new NetDevice.Options(1, new NetMode.Tap(tap.name(), polling),
                NotificationMode.NOTIFY, 0, 64, new int[0], UdpFrames.mac(GUEST_MAC), 1500), List.of(tap));
        InProcessBackend.Connected c = InProcessBackend.start(device, "net-poll-bench");
        Counter counter = new Counter();
        long[] guestSpurious = new long[1];
        Throwable[] failure = new Throwable[1];
        Throwable primary = null;
        try (device; NetDriver guest = NetDriver.start(c.frontend(), BENCH_GUEST)) {
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            Thread receiver = new Thread(() -> {
                try {
                    guest.postRx(0);
                    while (!stop.get()) {
                        int n = guest.receive(0, counter);
                        if (n > 0) {
                            counter.published = counter.frames;
                            guest.postRx(0);
                            continue;
                        }
                        if (guest.awaitRx(0, 20_000_000L) && guest.receive(0, counter) == 0) {
                            guestSpurious[0]++;
                        }
                        counter.published = counter.frames;
                        guest.postRx(0);
                    }
                } catch (Throwable t) {
                    failure[0] = t;
                }
            }, "net-poll-guest-rx");
            receiver.setDaemon(true);
            receiver.start();
            TimeUnit.NANOSECONDS.sleep(SETTLE_NANOS);
            Snapshot s0 = Snapshot.take(device, receiver, counter, ns);
            TimeUnit.NANOSECONDS.sleep((long) (windowSeconds * 1e9));
            Snapshot s1 = Snapshot.take(device, receiver, counter, ns);
            stop.set(true);
            receiver.join(10_000);
            if (failure[0] != null) {
                throw new BenchmarkFailedException("guest receiver failed: " + failure[0], failure[0]);
            }
            if (receiver.isAlive()) {
                throw new BenchmarkFailedException("guest receiver did not stop", null);
            }
            long frames = s1.frames - s0.frames;
            if (frames <= 0) {
                throw new BenchmarkFailedException("no frame reached the guest in " + windowSeconds + " s (" + polling.describe()
                        + "): " + s1.device.stats(), null);
            }
            NetRun.Window w0 = s0.device;
            NetRun.Window w1 = s1.device;
            NetStats d = w1.stats();
            NetStats b = w0.stats();
            QueueCounters dev = w1.deviceSince(w0, false);
            Map<String, Object> log = new LinkedHashMap<>();
            log.put("discipline", polling.describe());
            log.put("frames", frames);
            log.put("pps", frames * 1e9 / (w1.nanos() - w0.nanos()));
            log.put("wakeups", d.wakeups() - b.wakeups());
            log.put("spurious_wakeups", dev.spuriousWakeups);
            log.put("rx_eagain", d.rxEagain() - b.rxEagain());
            log.put("tx_eagain", d.txEagain() - b.txEagain());
            log.put("tap_registrations", d.tapRegistrations() - b.tapRegistrations());
            log.put("tap_read_calls", d.tapReadCalls() - b.tapReadCalls());
            log.put("weight_limited", d.weightLimited() - b.weightLimited());
            log.put("rx_ring_empty", d.rxRingEmpty() - b.rxRingEmpty());
            log.put("worker_cpu_ms", (w1.workerCpu() - w0.workerCpu()) / 1e6);
            log.put("guest_cpu_ms", (w1.guestCpu() - w0.guestCpu()) / 1e6);
            log.put("worker_allocated_bytes", w1.workerAlloc() - w0.workerAlloc());
            log.put("tap_tx_dropped", s1.tapDropped - s0.tapDropped);
            runLog.add(log);
            return new RunResult(frames, w1.nanos() - w0.nanos(), w1.guestCpu() - w0.guestCpu(),
                    w1.workerCpu() - w0.workerCpu(), guest.queue(NetDriver.rxRing(0)).counters(), dev, guestSpurious[0],
                    dev.spuriousWakeups, w1.gc() - w0.gc(), w1.workerAlloc() - w0.workerAlloc(), "not pinned", Double.NaN,
                    Double.NaN, 0);
        } catch (Throwable e) {
            primary = e;
            throw e;
        } finally {
            NetRun.awaitEnd(c.backend(), primary);
        }
    }

    /** Figures read at the start and the end of the measuring window: the device's and the generator's frames. */
    private record Snapshot(NetRun.Window device, long frames, long tapDropped) {
        static Snapshot take(NetDevice device, Thread receiver, Counter counter, TapNamespace ns) {
            long tapDropped = ns.tapStatistic("tx_dropped");
            return new Snapshot(NetRun.Window.take(device, receiver.threadId()), counter.published, tapDropped);
        }
    }

    /** Stops the generator (its "sent N" line is returned, or null) and removes namespace and tap. */
    public String stop() {
        String sent = null;
        try {
            flood.getOutputStream().close(); // the generator stops when its standard input closes
            if (flood.waitFor(10, TimeUnit.SECONDS)) {
                BufferedReader r = new BufferedReader(new InputStreamReader(flood.getInputStream(), StandardCharsets.UTF_8));
                sent = r.readLine();
            }
        } catch (Exception e) {
            sent = null;
        } finally {
            close();
        }
        return sent;
    }

    @Override
    public void close() {
        try {
            flood.destroyForcibly();
            ns.close();
        } finally {
            tap.close();
        }
    }
}
