package io.virtio4j.bench;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.stats.QueueCounters;
import io.virtio4j.devices.net.NetDevice;
import io.virtio4j.devices.net.NetMode;
import io.virtio4j.devices.net.NetStats;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.devices.net.driver.TxStream;
import io.virtio4j.vhost.backend.InProcessBackend;

import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The measurement behind the vhost-user rows of {@code lazy-avail-publish} and {@code in-order}: a driver transmitting
 * 64-byte frames into a vhost-user back-end that busy-polls (or sleeps on kicks), the set-up of the lessons' original
 * claims, with the row's option (the driver's {@code avail.idx} publication policy, VIRTIO_F_IN_ORDER) as what differs.
 *
 * <p>Back-end: {@code serve net --mode rxonly} (its {@link NetDevice} with {@code serve net}'s defaults, and the
 * vhost-user session with {@code BackendOptions.defaults()}, what {@code serve net} builds with its default
 * {@code --barriers} and {@code --cached-avail}) waiting on its queues as the run's configuration says (poll or
 * notify), its queue pair's thread pinned to the configuration's device CPU (a run whose thread the kernel did not pin
 * says so in its pinning). It is served in this JVM over a socket pair ({@link InProcessBackend}) instead of a socket
 * file; guest memory is still a memfd the session maps for itself, rings and kicks are the same. One device per
 * notification mode, built on first use and served to one connection after another, as {@code serve net} serves one
 * front-end after another; its counters add up across connections, so each run reads its own as differences.
 *
 * <p>Driver: the front-end library's {@link NetDriver}, connected afresh every run with the run's publication policy,
 * ring format, queue size and EVENT_IDX, driven by a thread pinned to the driver CPU through {@link TxStream} rounds
 * of up to {@code batch} frames of {@code bufSize} bytes ({@code drive net --mode txonly}'s loop). It sends for a
 * settling time, then for the measuring window, whose frames per second are the run's buffers/s; the transmit ring's
 * kicks and {@code avail.idx} stores over the window are its counters. The window lasts its time and at least
 * {@link #MIN_WINDOW_FRAMES} frames (within a grace of 10 s), so that a short one on a loaded machine still measures
 * something. Then it drains: waits until the back-end has used every frame, disconnects, and the back-end's count of
 * frames received in the run must equal the frames sent, with no drop, or the run fails
 * ({@link BenchmarkFailedException}): no frame is ever silently lost.
 *
 * <p>The feature bits a run asks for through its options ({@code in-order}, {@code ring}, {@code event-idx}) are
 * checked twice: the back-end must offer each one asked for before the driver connects, and after the run the features
 * the back-end was set (SET_FEATURES, its rings built from them) must hold each one asked for and none asked against.
 * Else the run fails naming the feature ({@link BenchmarkFailedException}): a row whose runs silently went without the
 * feature it compares would compare nothing.
 */
public final class VhostUserTxBench implements AutoCloseable {
    private static final long SETTLE_NANOS = 200_000_000L;
    private static final long DRAIN_NANOS = 10_000_000_000L;
    private static final long DRAIN_STEP_NANOS = 10_000_000L;
    /** Frames a window holds at least, time permitting ({@link #WINDOW_GRACE_NANOS}): see {@link Sender#run}. */
    static final long MIN_WINDOW_FRAMES = 1024;
    private static final long WINDOW_GRACE_NANOS = 10_000_000_000L;
    /** How long a sender told to stop gets to end before its driver is left open rather than closed under it. */
    private static final long STOP_MILLIS = 5_000;
    private static final int PROBE_ROUNDS = 20_000;
    /**
     * The configuration's options a run follows, what a row's report gives as its configuration. Every other option
     * must keep its default, or a row would claim a setting the back-end (built with serve net's defaults) never had;
     * {@code bufs} is taken at any value and means nothing here (runs are timed).
     */
    static final Set<String> FOLLOWED = Set.of("queue-size", "ring", "batch", "buf-size", "event-idx", "in-order",
            "avail-publish", "notify", "driver-cpu", "device-cpu");
    /**
     * The value a run takes for each option it does not follow: the defaults, except reclaim, eager: the sender's
     * {@link TxStream} reclaims at the start of every round, as Linux's virtio-net driver does.
     */
    static final BenchConfig TAKEN = BenchConfig.defaults().with("reclaim", "eager");

    private final double windowSeconds;
    private final Map<NotificationMode, NetDevice> devices = new EnumMap<>(NotificationMode.class);
    private final Map<NotificationMode, Integer> deviceCpus = new EnumMap<>(NotificationMode.class);
    private final List<Map<String, Object>> runLog = new ArrayList<>();

    /** @param windowSeconds measuring window of each run, after {@link #SETTLE_NANOS} of sending */
    public VhostUserTxBench(double windowSeconds) {
        this.windowSeconds = checkWindow(windowSeconds);
    }

    /** {@code windowSeconds} when it is a window a run can have, else refused naming {@code vhostSeconds}. */
    static double checkWindow(double windowSeconds) {
        if (!(windowSeconds > 0 && windowSeconds <= 3600)) {
            throw new InvalidBenchOptionException("%s must be in (0, 3600] seconds, got " + windowSeconds, "vhostSeconds");
        }
        return windowSeconds;
    }

    /** The options of {@code cfg} a run follows ({@link #FOLLOWED}), in the configuration's order. */
    static Map<String, String> followed(BenchConfig cfg) {
        Map<String, String> m = new LinkedHashMap<>();
        cfg.toMap().forEach((option, value) -> {
            if (FOLLOWED.contains(option)) {
                m.put(option, value);
            }
        });
        return m;
    }

    /** What every run shares, for the report. */
    public Map<String, Object> describe(NotificationMode mode) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("backend", "serve net --mode rxonly --notify " + mode.name().toLowerCase(Locale.ROOT)
                + " (NetDevice and vhost-user session as serve net builds them, weight " + NetDevice.Options.DEFAULT_WEIGHT
                + ", served in this JVM over a socket pair), queue pair thread pinned to the device CPU");
        m.put("driver", "NetDriver (the front-end library's), connected afresh every run with the run's publication "
                + "policy, ring format and IN_ORDER (checked against the features the back-end negotiated), on a "
                + "thread pinned to the driver CPU: drive net --mode txonly's loop (TxStream: reclaim, add up to batch "
                + "frames, kickTx)");
        m.put("settle_s", SETTLE_NANOS / 1e9);
        m.put("window_s", windowSeconds);
        m.put("window_min_frames", MIN_WINDOW_FRAMES);
        m.put("exact", "after each window the driver drains until the back-end used every frame; the back-end's "
                + "received count must equal the driver's sent count with no drop, or the run fails");
        return m;
    }

    /** Per-run figures, in run order, for the report. */
    public List<Map<String, Object>> runLog() {
        return runLog;
    }

    /** One measured run of {@code cfg}: its publication policy against the back-end waiting as its mode says. */
    public RunResult run(BenchConfig cfg) throws InterruptedException {
        Map<String, String> given = cfg.toMap();
        TAKEN.toMap().forEach((option, value) -> {
            if (!FOLLOWED.contains(option) && !option.equals("bufs") && !value.equals(given.get(option))) {
                throw new InvalidBenchOptionException("%s " + InvalidBenchOptionException.literal(given.get(option))
                        + ": a vhost-user run takes only " + value, option);
            }
        });
        NetDevice device = device(cfg.mode(), cfg.deviceCpu());
        requireFeatures(cfg, device.features(), false);
        double before = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
        NetStats s0 = device.stats(0);
        NetDriver.Config config = NetDriver.Config.defaults().withFormat(cfg.ring()).withInOrder(cfg.inOrder())
                .withQueueSize(cfg.ringSize()).withEventIdx(cfg.eventIdx()).withPublication(cfg.availPublish());
        InProcessBackend.Connected c = InProcessBackend.start(device, "vhost-user-tx-bench");
        Sender sender;
        Thread sending = null;
        Throwable primary = null;
        try {
            NetDriver g = NetDriver.start(c.frontend(), config);
            sender = new Sender(g, device, cfg, (long) (windowSeconds * 1e9));
            Thread t = new Thread(sender, "vhost-user-tx-driver");
            // a sender that would not stop must not keep the JVM alive after the run's failure is reported
            t.setDaemon(true);
            sending = t;
            // Whatever ends the run (its end, a stall, a failure, an interrupted join), the sender is told to stop and
            // given a bounded time to, so the driver is closed rather than left sending. Never closed under a thread
            // still sending on it (a closed driver's rings are unmapped memory): a sender that would not stop leaves
            // it open. A failure to close rides along with the run's own.
            Sender stopping = sender;
            try (Closer stopThenClose = () -> {
                stopping.stop = true;
                awaitStop(t);
                if (!t.isAlive()) {
                    g.close();
                }
            }) {
                t.start();
                long limitMillis = (SETTLE_NANOS + WINDOW_GRACE_NANOS + DRAIN_NANOS) / 1_000_000
                        + (long) (windowSeconds * 1000) + 30_000;
                t.join(limitMillis);
                if (t.isAlive()) {
                    // every step of the sender's loops checks the flag: it ends within a round or a drain step
                    sender.stop = true;
                    t.join(STOP_MILLIS);
                    throw new BenchmarkStalledException("vhost-user driver did not finish within " + limitMillis + " ms"
                            + (t.isAlive() ? "; its thread did not stop either, so the driver is left open" : ""));
                }
                if (sender.failure.get() != null) {
                    throw new BenchmarkFailedException("vhost-user driver failed: " + sender.failure.get(),
                            sender.failure.get());
                }
            }
        } catch (Throwable e) {
            primary = e;
            throw e;
        } finally {
            if (sending == null || !sending.isAlive()) {
                // the connection ends once the driver is closed: the queue thread is stopped, its counts final
                NetRun.awaitEnd(c.backend(), primary);
            }
        }
        NetStats s1 = device.stats(0);
        long received = s1.fromGuestPackets() - s0.fromGuestPackets();
        long drops = s1.fromGuestDrops() - s0.fromGuestDrops();
        if (!sender.drained || received != sender.sent || drops != 0) {
            throw new BenchmarkFailedException(String.format(Locale.ROOT, "vhost-user %s, %s: the driver sent %d frames, "
                            + "the back-end received %d and dropped %d%s", cfg.mode(), cfg.availPublish(), sender.sent,
                    received, drops, sender.drained ? "" : "; frames were still in flight after the "
                            + DRAIN_NANOS / 1_000_000_000 + " s drain"), null);
        }
        // the connection has ended: the back-end's last SET_FEATURES is this run's, which its rings were built from
        long negotiated = device.negotiatedFeatures();
        requireFeatures(cfg, negotiated, true);
        double after = PingPongProbe.roundTripNanos(cfg.driverCpu(), cfg.deviceCpu(), PROBE_ROUNDS);
        NetRun.Window w0 = sender.start.device;
        NetRun.Window w1 = sender.end.device;
        long frames = sender.end.sent - sender.start.sent;
        if (frames <= 0) {
            // the ring stayed full for the whole window and its grace: the back-end used nothing (its thread got no
            // CPU); a rate of 0 has no ratio, so the run fails rather than be dropped
            throw new BenchmarkFailedException("vhost-user " + cfg.mode() + ", " + cfg.availPublish() + ": no frame sent "
                    + "in the " + windowSeconds + " s window and its " + WINDOW_GRACE_NANOS / 1_000_000_000
                    + " s grace, the back-end used none (" + sender.sent + " sent in all)", null);
        }
        QueueCounters tx = sender.end.tx.minus(sender.start.tx);
        QueueCounters dev = w1.deviceSince(w0, true);
        long nanos = w1.nanos() - w0.nanos();
        Map<String, Object> log = new LinkedHashMap<>();
        log.put("backend", cfg.mode().name().toLowerCase(Locale.ROOT));
        log.put("publish", cfg.availPublish().name().toLowerCase(Locale.ROOT));
        // as the back-end negotiated them, not as asked (checked equal above)
        log.put("ring", VirtioFeatures.has(negotiated, VirtioFeatures.RING_PACKED) ? "packed" : "split");
        log.put("in_order", VirtioFeatures.has(negotiated, VirtioFeatures.IN_ORDER) ? "on" : "off");
        log.put("window_frames", frames);
        log.put("window_s", nanos / 1e9);
        log.put("pps", frames * 1e9 / nanos);
        log.put("tx", sender.sent);
        log.put("backend_rx", received);
        log.put("kicks_per_frame", (double) tx.kicksSent / frames);
        log.put("publications_per_frame", (double) tx.availIdxWrites / frames);
        log.put("avail_entry_writes_per_frame", (double) tx.availEntryWrites / frames);
        log.put("backend_kicks_read", w1.stats().kicks() - w0.stats().kicks());
        // what the sending and the back-end's threads allocated in the window: nothing once compiled
        // (NetDriverAllocationTest asserts it); a short run on a busy machine can end before the JIT has finished
        log.put("driver_allocated_bytes", sender.driverAllocated);
        log.put("device_allocated_bytes", w1.workerAlloc() - w0.workerAlloc());
        log.put("driver_cpu_ms", (w1.guestCpu() - w0.guestCpu()) / 1e6);
        log.put("device_cpu_ms", (w1.workerCpu() - w0.workerCpu()) / 1e6);
        runLog.add(log);
        return new RunResult(frames, nanos, w1.guestCpu() - w0.guestCpu(), w1.workerCpu() - w0.workerCpu(), tx, dev, 0,
                dev.spuriousWakeups, w1.gc() - w0.gc(), sender.driverAllocated + (w1.workerAlloc() - w0.workerAlloc()),
                Pinning.describe(cfg, sender.pinError, w1.pinErrorSince(w0)), before, after, 0);
    }

    /**
     * Checks the virtio feature bits behind {@code cfg}'s options against {@code features}: those the back-end offers
     * ({@code negotiated} false: each one {@code cfg} asks for must be there) or those it was set ({@code negotiated}
     * true: each one asked for must be there, and none asked against).
     *
     * @throws BenchmarkFailedException naming the first feature that is not as {@code cfg} asks, and its option
     */
    static void requireFeatures(BenchConfig cfg, long features, boolean negotiated) {
        Map<String, String> options = cfg.toMap();
        requireFeature(cfg.inOrder(), options, "in-order", VirtioFeatures.IN_ORDER, "VIRTIO_F_IN_ORDER", features,
                negotiated);
        requireFeature(cfg.ring() == RingFormat.PACKED, options, "ring", VirtioFeatures.RING_PACKED,
                "VIRTIO_F_RING_PACKED", features, negotiated);
        requireFeature(cfg.eventIdx(), options, "event-idx", VirtioFeatures.EVENT_IDX, "VIRTIO_RING_F_EVENT_IDX",
                features, negotiated);
    }

    private static void requireFeature(boolean asked, Map<String, String> options, String key, int bit, String name,
                                       long features, boolean negotiated) {
        boolean there = VirtioFeatures.has(features, bit);
        String option = key + " " + options.get(key);
        if (asked && !there) {
            throw new BenchmarkFailedException(String.format(Locale.ROOT, "vhost-user run with %s: the back-end %s %s "
                            + "(bit %d; features 0x%x), so the run %s without it", option,
                    negotiated ? "did not negotiate" : "does not offer", name, bit, features,
                    negotiated ? "went" : "would go"), null);
        }
        if (negotiated && !asked && there) {
            throw new BenchmarkFailedException(String.format(Locale.ROOT, "vhost-user run with %s: the back-end "
                    + "negotiated %s (bit %d; features 0x%x), so the run went with it", option, name, bit, features), null);
        }
    }

    /** The back-end for {@code mode}, built on first use. */
    private NetDevice device(NotificationMode mode, int cpu) {
        Integer pinned = deviceCpus.get(mode);
        if (pinned != null && pinned != cpu) {
            throw new IllegalArgumentException("the " + mode + " back-end runs on CPU " + pinned + ", not " + cpu);
        }
        return devices.computeIfAbsent(mode, m -> {
            deviceCpus.put(m, cpu);
            return new NetDevice(new NetDevice.Options(1, NetMode.RXONLY, m, NetDevice.Options.DEFAULT_HYBRID_SPIN_NANOS,
                    NetDevice.Options.DEFAULT_WEIGHT, cpu < 0 ? new int[0] : new int[] {cpu},
                    HexFormat.ofDelimiter(":").parseHex(NetDevice.Options.DEFAULT_MAC), NetDevice.Options.DEFAULT_MTU));
        });
    }

    /**
     * Waits up to {@link #STOP_MILLIS} for {@code t} to end, through interrupts (the closer must not leave the driver
     * open because the join that ended the run was interrupted); the interrupt is kept for the caller.
     */
    private static void awaitStop(Thread t) {
        boolean interrupted = false;
        long deadline = System.nanoTime() + STOP_MILLIS * 1_000_000;
        for (long left; t.isAlive() && (left = deadline - System.nanoTime()) > 0; ) {
            try {
                t.join(Duration.ofNanos(left));
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Closing without a checked exception, for a try-with-resources that closes only when it may. */
    private interface Closer extends AutoCloseable {
        @Override
        void close();
    }

    /** Figures read at the start and the end of the measuring window, on the driver's thread. */
    private record Window(NetRun.Window device, long sent, QueueCounters tx) {
        static Window take(TxStream s, NetDriver g, NetDevice device) {
            return new Window(NetRun.Window.take(device, Thread.currentThread().threadId()), s.sent(),
                    g.queue(NetDriver.txRing(0)).counters().copy());
        }
    }

    /** The driver's thread: settle, window, drain; each step ends early once {@link #stop} is set. */
    private static final class Sender implements Runnable {
        private final NetDriver g;
        private final NetDevice device;
        private final BenchConfig cfg;
        private final long windowNanos;
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        /** Set by the run's thread when the sender overran its time: end now, the driver is about to be closed. */
        volatile boolean stop;
        // written by the sender's thread, read after joining it
        String pinError;
        Window start;
        Window end;
        long driverAllocated;
        long sent;
        boolean drained;

        Sender(NetDriver g, NetDevice device, BenchConfig cfg, long windowNanos) {
            this.g = g;
            this.device = device;
            this.cfg = cfg;
            this.windowNanos = windowNanos;
        }

        @Override
        public void run() {
            try (Arena arena = Arena.ofConfined()) {
                pinError = Pinning.pin(cfg.driverCpu(), "driver");
                TxStream s = new TxStream(g, 0, arena.allocate(cfg.bufSize(), 8), cfg.batch(), false);
                long settled = System.nanoTime() + SETTLE_NANOS;
                send(s, settled, 0, settled);
                start = Window.take(s, g, device);
                // read right around the sending loop, so the snapshots' own objects are not counted
                com.sun.management.ThreadMXBean t = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
                long alloc0 = t.getCurrentThreadAllocatedBytes();
                // the window ends at the later of its time and MIN_WINDOW_FRAMES sent (so used by the back-end, but
                // for a ring's worth), within a grace: on a loaded machine a short window can fall where the back-end
                // got no CPU at all, and a rate of nothing has no ratio
                send(s, start.device.nanos() + windowNanos, start.sent + MIN_WINDOW_FRAMES,
                        start.device.nanos() + windowNanos + WINDOW_GRACE_NANOS);
                driverAllocated = t.getCurrentThreadAllocatedBytes() - alloc0;
                end = Window.take(s, g, device);
                drained = drain(s);
                sent = s.sent();
            } catch (Throwable t) {
                failure.set(t);
            }
        }

        /** Rounds until {@code until} and {@code frames} sent, or {@code hardEnd}, or {@link #stop}. */
        private void send(TxStream s, long until, long frames, long hardEnd) {
            long now;
            while (!stop && (now = System.nanoTime()) < hardEnd && (now < until || s.sent() < frames)) {
                if (s.round(Long.MAX_VALUE) == 0) {
                    Thread.onSpinWait();
                }
            }
        }

        /** {@link TxStream#drain} in steps, so that {@link #stop} is seen within one. */
        private boolean drain(TxStream s) throws InterruptedException {
            long end = System.nanoTime() + DRAIN_NANOS;
            boolean done;
            do {
                done = s.drain(DRAIN_STEP_NANOS);
            } while (!done && !stop && System.nanoTime() < end);
            return done;
        }
    }

    /** Stops the back-ends. */
    @Override
    public void close() {
        for (NetDevice d : devices.values()) {
            d.close();
        }
        devices.clear();
    }
}
