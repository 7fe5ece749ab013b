package io.virtio4j.bench;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.net.TapPolling;

import java.util.List;
import java.util.TreeSet;

/**
 * One A/B experiment behind a lesson: a base configuration, the option that differs, the figure compared,
 * and the original claim with the direction it predicts.
 *
 * @param id        row id, e.g. {@code cached-avail-idx-toggle}
 * @param lesson    the lesson it belongs to (what {@code --only} selects), e.g. {@code cached-avail-idx}
 * @param claim     the original report, in words
 * @param base      configuration shared by A and B
 * @param key       the option that differs (a bench option name)
 * @param a         its value for A (the old behaviour)
 * @param b         its value for B (the new behaviour)
 * @param metric    the figure whose ratio B/A decides the verdict
 * @param expectsIncrease true when the claim predicts B/A &gt; 1 for {@code metric}, false when it predicts &lt; 1
 * @param claimedRatio the claimed B/A for {@code metric}, for the table
 * @param placeholder non-null when the experiment cannot run yet: why
 * @param tap         for a tap back-end experiment ({@link NetPollBench}), the disciplines of A and B; null for a ring
 *                    benchmark experiment, whose sides are {@link #configA()} and {@link #configB()}
 * @param processes   for a ring benchmark experiment, 1 (driver and device threads in one JVM) or 2 (the device in
 *                    a second JVM, {@link TwoProcessBenchmark})
 * @param vhostUser   a vhost-user experiment ({@link VhostUserTxBench}): the front-end library's driver transmitting
 *                    into {@code serve net}'s rxonly back-end, which waits as {@code base}'s mode says; its sides are
 *                    {@link #configA()} and {@link #configB()} like a ring benchmark's
 */
public record Experiment(String id, String lesson, String claim, BenchConfig base, String key, String a, String b,
                         Metric metric, boolean expectsIncrease, double claimedRatio, String placeholder,
                         TapSides tap, int processes, boolean vhostUser) {

    public Experiment {
        if (processes != 1 && (processes != 2 || tap != null || vhostUser)) {
            throw new IllegalArgumentException("experiment " + id + ": processes must be 1, or 2 for a ring benchmark, got "
                    + processes);
        }
        if (vhostUser && tap != null) {
            throw new IllegalArgumentException("experiment " + id + ": a vhost-user experiment has no tap sides");
        }
        if (vhostUser && !VhostUserTxBench.FOLLOWED.contains(key)) {
            // its runs would refuse either side, or (bufs) run both alike: the row would compare nothing
            throw new IllegalArgumentException("experiment " + id + ": a vhost-user experiment varies an option its runs "
                    + "follow " + new TreeSet<>(VhostUserTxBench.FOLLOWED) + ", got " + key);
        }
    }

    /** The two disciplines a tap back-end experiment compares. */
    public record TapSides(TapPolling a, TapPolling b) {
    }

    /** A ring benchmark experiment in one process. */
    public Experiment(String id, String lesson, String claim, BenchConfig base, String key, String a, String b,
                      Metric metric, boolean expectsIncrease, double claimedRatio, String placeholder) {
        this(id, lesson, claim, base, key, a, b, metric, expectsIncrease, claimedRatio, placeholder, null, 1, false);
    }

    private static Experiment tap(String id, String claim, TapPolling a, TapPolling b, double claimed) {
        return new Experiment(id, NET_POLL, claim, BenchConfig.defaults(), "rx-poll-stop/tx-poll", label(a), label(b),
                Metric.BUFFERS_PER_S, true, claimed, null, new TapSides(a, b), 1, false);
    }

    /**
     * A request-response row of the barrier lesson: WEAK vs STRONG with one buffer in flight, both sides waiting in
     * {@code mode}, in one process or two. The claim's throughput figure is transactions per second (one buffer is
     * one transaction), its CPU figure the CPU per buffer beside it.
     */
    private static Experiment requestResponse(BenchConfig rr, String mode, int processes) {
        return new Experiment("barrier-strength-rr-" + mode + "-" + processes + "p", BARRIERS,
                "request-response (one buffer in flight, netperf TCP_RR's shape), " + mode + " mode, "
                        + (processes == 1 ? "driver and device threads in one process" : "the device in a second process")
                        + ": STRONG barriers claimed up to -14% transactions/s and +35% CPU per transaction",
                rr.with("notify", mode), "barriers", "weak", "strong", Metric.BUFFERS_PER_S, false, 0.86, null, null,
                processes, false);
    }

    /**
     * A vhost-user row ({@link VhostUserTxBench}): {@code key} at {@code a} against {@code b}, the driver transmitting
     * {@code base}'s frames in rounds of its batch into {@code serve net --mode rxonly} waiting in {@code base}'s mode.
     * {@code key} and every option {@code base} sets must be ones the runs follow ({@link VhostUserTxBench#FOLLOWED}).
     */
    private static Experiment vhostUser(String id, String lesson, String claim, BenchConfig base, String key, String a,
                                        String b, Metric metric, boolean expectsIncrease, double claimed) {
        return new Experiment(id, lesson, claim, base, key, a, b, metric, expectsIncrease, claimed, null, null, 1, true);
    }

    /** Short enough for a chart title: "off/always", "on/on-eagain". */
    private static String label(TapPolling p) {
        return (p.rxPollStop() ? "on" : "off") + "/" + p.txPoll().label();
    }

    public static final String CACHED_AVAIL = "cached-avail-idx";
    public static final String LAZY_PUBLISH = "lazy-avail-publish";
    public static final String BARRIERS = "barrier-strength";
    public static final String NET_POLL = "net-poll-discipline";
    public static final String RING_FORMAT = "ring-format";
    public static final String IN_ORDER = "in-order";

    /**
     * The experiments, with {@code bufs} buffers per run; a request-response run moves a tenth of them polling and a
     * hundredth sleeping on notifications, since a transaction costs a whole round trip (and with notifications two
     * wake-ups), so that its runs last about as long as a stream run's.
     */
    public static List<Experiment> all(long bufs) {
        // The claims' drivers (virtio_test, ringtest, Linux virtio-net) take used buffers back after every round of
        // adds: reclaim eager, not the bench's default (which would change every row's background, the chase between
        // the two sides that several lessons are about).
        BenchConfig d = BenchConfig.defaults().with("bufs", Long.toString(bufs)).with("reclaim", "eager");
        BenchConfig notify64 = d.with("notify", "notify").with("batch", "64");
        BenchConfig poll = d.with("notify", "poll").with("batch", "64");
        BenchConfig rrPoll = d.with("bufs", Long.toString(Math.max(1, bufs / 10))).requestResponse();
        BenchConfig rrNotify = d.with("bufs", Long.toString(Math.max(1, bufs / 100))).requestResponse();
        return List.of(
                new Experiment("cached-avail-idx", CACHED_AVAIL,
                        "vhost: caching the avail index read in vhost_enable_notify() cut run time by 1.5% "
                                + "(virtio_test --batch=64)",
                        notify64, "cached-avail", "off", "on", Metric.NS_PER_BUFFER, false, 0.985, null),
                new Experiment("cached-avail-idx-toggle", CACHED_AVAIL,
                        "with notifications forced off and on around every pop: -3.7% time, far fewer "
                                + "instructions and branches",
                        notify64.with("toggle-notify", "true"), "cached-avail", "off", "on", Metric.NS_PER_BUFFER,
                        false, 0.963, null),
                new Experiment("lazy-avail-publish", LAZY_PUBLISH,
                        "publishing avail.idx once per kick instead of per buffer: 3.79 -> 6.33 Mpps (+67%) with "
                                + "the device busy-polling",
                        poll, "avail-publish", "eager", "lazy", Metric.BUFFERS_PER_S, true, 1.67, null),
                new Experiment("lazy-avail-publish-adaptive", LAZY_PUBLISH,
                        "adaptive publication (at least every N adds) keeps the busy-polling gain of lazy "
                                + "publication",
                        poll, "avail-publish", "eager", "adaptive", Metric.BUFFERS_PER_S, true, 1.67, null),
                new Experiment("lazy-avail-publish-notify", LAZY_PUBLISH,
                        "reviewer's concern: without polling, lazy publication needs more kicks per buffer",
                        notify64, "avail-publish", "eager", "lazy", Metric.KICKS_PER_BUFFER, true, Double.NaN, null),
                vhostUser("lazy-avail-publish-vhost-user", LAZY_PUBLISH,
                        "the original set-up: a guest's driver transmitting 64-byte frames into a busy-polling vhost-user "
                                + "back-end (DPDK there; here serve net rxonly, poll), 3.79 -> 6.33 Mpps (+67%)",
                        poll, "avail-publish", "eager", "lazy", Metric.BUFFERS_PER_S, true, 1.67),
                vhostUser("lazy-avail-publish-vhost-user-adaptive", LAZY_PUBLISH,
                        "the same set-up, adaptive publication: keeps the busy-polling gain of lazy publication",
                        poll, "avail-publish", "eager", "adaptive", Metric.BUFFERS_PER_S, true, 1.67),
                vhostUser("lazy-avail-publish-vhost-user-notify", LAZY_PUBLISH,
                        "the reviewer's row in the same set-up: a back-end sleeping on kicks (serve net rxonly, notify); "
                                + "lazy publication needs more kicks per buffer",
                        notify64, "avail-publish", "eager", "lazy", Metric.KICKS_PER_BUFFER, true, Double.NaN),
                new Experiment("barrier-strength", BARRIERS,
                        "mandatory (hardware-strength) barriers cost up to 14% throughput and up to 35% more CPU "
                                + "(TCP_RR)",
                        poll, "barriers", "weak", "strong", Metric.BUFFERS_PER_S, false, 0.86, null),
                new Experiment("barrier-strength-batch1", BARRIERS,
                        "the same streaming at batch 1 (a kick and a publication per buffer, the ring still full)",
                        poll.with("batch", "1"), "barriers", "weak", "strong", Metric.BUFFERS_PER_S, false, 0.86, null),
                requestResponse(rrPoll, "poll", 1),
                requestResponse(rrNotify, "notify", 1),
                requestResponse(rrPoll, "poll", 2),
                requestResponse(rrNotify, "notify", 2),
                new Experiment("packed-vs-split", RING_FORMAT,
                        "Linux virtio_ring in-order series (2025): packed receive +16% pps over split with 64-byte "
                                + "packets, transmit flat; here the ring benchmark (64-byte buffers, device "
                                + "busy-polling), where the claim to test is packed >= split throughput (an interval "
                                + "containing 1 is 'flat', which the transmit figure also saw)",
                        poll, "ring", "split", "packed", Metric.BUFFERS_PER_S, true, 1.16, null),
                new Experiment("in-order", IN_ORDER,
                        "the same series: negotiating VIRTIO_F_IN_ORDER gives the split ring about +5% pps; here "
                                + "the split ring benchmark with the device busy-polling",
                        poll, "in-order", "off", "on", Metric.BUFFERS_PER_S, true, 1.05, null),
                new Experiment("in-order-lazy", IN_ORDER,
                        "the same +5% for the split ring, with the driver publishing avail.idx once per kick (as DPDK's "
                                + "virtio-user does per burst): the device, faster under IN_ORDER, then finds whole "
                                + "batches instead of chasing the driver buffer by buffer",
                        poll.with("avail-publish", "lazy"), "in-order", "off", "on", Metric.BUFFERS_PER_S, true,
                        1.05, null),
                new Experiment("in-order-packed", IN_ORDER,
                        "the same series: IN_ORDER +19% pps on vhost-net transmit; here the packed ring benchmark, "
                                + "where the device writes one used descriptor per batch",
                        poll.with("ring", "packed"), "in-order", "off", "on", Metric.BUFFERS_PER_S, true, 1.19, null),
                vhostUser("in-order-vhost-user", IN_ORDER,
                        "the same series: IN_ORDER +19% pps on vhost-net transmit, a guest's virtio-net driver "
                                + "transmitting into the kernel's vhost-net (its worker sending each frame to a tap); "
                                + "here the front-end library's driver (NetDriver, a JVM thread, not a guest) transmits "
                                + "64-byte frames over vhost-user into serve net rxonly, which busy-polls and counts "
                                + "and drops each frame (no tap): split ring, eager publication",
                        poll, "in-order", "off", "on", Metric.BUFFERS_PER_S, true, 1.19),
                vhostUser("in-order-vhost-user-packed", IN_ORDER,
                        "the same +19% on vhost-net transmit, in the same vhost-user set-up (NetDriver into serve net "
                                + "rxonly, busy-polling, no guest, no tap) on a packed ring, where the back-end writes one "
                                + "used descriptor per batch (the claim comes without its ring format)",
                        poll.with("ring", "packed"), "in-order", "off", "on", Metric.BUFFERS_PER_S, true, 1.19),
                vhostUser("in-order-vhost-user-lazy", IN_ORDER,
                        "the same +19% on vhost-net transmit, in the same vhost-user set-up (NetDriver into serve net "
                                + "rxonly, busy-polling, no guest, no tap), split ring with the driver publishing "
                                + "avail.idx once per kick (as DPDK's virtio-user does per burst; Linux's driver, the "
                                + "claim's, publishes every buffer)",
                        poll.with("avail-publish", "lazy"), "in-order", "off", "on", Metric.BUFFERS_PER_S, true, 1.19),
                tap("net-poll-discipline",
                        "vhost-net: stopping rx polling of the tap while draining it +8.8% pps, then polling it for "
                                + "writability only after EAGAIN +8% more (together about +17.5%); here: rx pps of the tap "
                                + "back-end under a UDP flood, old vs new discipline",
                        TapPolling.old(), TapPolling.current(), 1.088 * 1.08),
                tap("net-poll-discipline-rx",
                        "the first lesson alone (tx polled always, as when it landed): stop rx polling while draining, "
                                + "+8.8% pps",
                        new TapPolling(false, TapPolling.TxPoll.ALWAYS), new TapPolling(true, TapPolling.TxPoll.ALWAYS),
                        1.088),
                tap("net-poll-discipline-tx",
                        "the second lesson on top of the first: poll for writability only after EAGAIN, +8% pps more",
                        new TapPolling(true, TapPolling.TxPoll.ALWAYS), TapPolling.current(), 1.08));
    }

    /**
     * The event count that shows the lesson's mechanism beside its effect, or null: avail.idx loads for the cached
     * avail index, avail.idx stores for lazy publication, STRONG-only fences for the barriers, the device's avail.idx
     * loads for IN_ORDER (a vhost-user row of it on a split ring: the driver's avail entry stores). They come from the
     * queues' own {@code QueueCounters}, which the rings keep in every build (plain fields of the owning thread), so
     * the measured runs are the ordinary code: nothing is instrumented for the experiment.
     */
    public Metric counter() {
        if (tap != null) {
            return null;
        }
        return switch (lesson) {
            case CACHED_AVAIL -> Metric.AVAIL_IDX_READS_PER_BUFFER;
            case LAZY_PUBLISH -> Metric.AVAIL_IDX_WRITES_PER_BUFFER;
            case BARRIERS -> Metric.STRONG_FENCES_PER_BUFFER;
            // the device's polls of the driver's index: how often the device, faster under IN_ORDER, finds the ring
            // empty and reads lines the driver is still writing (the chase that costs the eager split row its gain)
            // (over vhost-user the back-end's queue counters stay with its thread, so a vhost-user row shows the
            // driver's side instead: on a split ring its avail entry stores, one a frame without IN_ORDER, under it only
            // where the entry changes; a packed ring has no avail entries, and no counter to show)
            case IN_ORDER -> !vhostUser ? Metric.AVAIL_IDX_READS_PER_BUFFER
                    : base.ring() == RingFormat.SPLIT ? Metric.AVAIL_ENTRY_WRITES_PER_BUFFER : null;
            default -> null;
        };
    }

    public BenchConfig configA() {
        return base.with(key, a);
    }

    public BenchConfig configB() {
        return base.with(key, b);
    }
}
