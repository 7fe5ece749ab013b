package io.virtio4j.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Runs the lesson experiments and writes {@code experiments.json}, {@code experiments.md} and one PNG each. The
 * in-process ring rows share one {@link AdaptivePairs} schedule (a fixed number of pairs, or pairs until each
 * row's interval is narrow enough within one time budget for all); the vhost-user rows share another, with a budget
 * of their own; the tap rows get a fixed number of pairs.
 */
public final class ExperimentRunner {
    private final long bufs;
    private final AdaptivePairs.Stopping ringStopping;
    private final int tapPairs;
    private final int warmup;
    private final Set<String> only;
    private final double netWindowSeconds;
    private final AdaptivePairs.Stopping vhostStopping;
    private final double vhostWindowSeconds;
    private final List<Throwable> failures = new ArrayList<>();

    /** {@code runs} pairs for every row. */
    public ExperimentRunner(long bufs, int runs, int warmup, Set<String> only) {
        this(bufs, AdaptivePairs.Stopping.fixed(runs), runs, warmup, only, 3.0, AdaptivePairs.Stopping.fixed(runs), 0.5);
    }

    /**
     * @param ringStopping       how many pairs the in-process ring rows get
     * @param tapPairs           pairs of each tap back-end row
     * @param only               lesson or row ids to run; empty for all
     * @param netWindowSeconds   measuring window of each run of the tap back-end experiments
     * @param vhostStopping      how many pairs the vhost-user rows get
     * @param vhostWindowSeconds measuring window of each run of the vhost-user rows
     * @throws InvalidBenchOptionException naming {@code vhostSeconds} when that window is out of range
     */
    public ExperimentRunner(long bufs, AdaptivePairs.Stopping ringStopping, int tapPairs, int warmup, Set<String> only,
                            double netWindowSeconds, AdaptivePairs.Stopping vhostStopping, double vhostWindowSeconds) {
        this.bufs = bufs;
        this.ringStopping = ringStopping;
        this.tapPairs = tapPairs;
        this.warmup = warmup;
        this.only = only;
        this.netWindowSeconds = netWindowSeconds;
        this.vhostStopping = vhostStopping;
        // refused now, not after the ring rows have run
        this.vhostWindowSeconds = VhostUserTxBench.checkWindow(vhostWindowSeconds);
    }

    public List<Experiment> selected() {
        List<Experiment> out = new ArrayList<>();
        for (Experiment e : Experiment.all(bufs)) {
            if (only.isEmpty() || only.contains(e.lesson()) || only.contains(e.id())) {
                out.add(e);
            }
        }
        if (out.isEmpty()) {
            List<String> ids = new ArrayList<>();
            for (Experiment e : Experiment.all(bufs)) {
                ids.add(e.id());
            }
            throw new InvalidBenchOptionException("%s " + InvalidBenchOptionException.literal(only)
                    + " matches no experiment; known: " + InvalidBenchOptionException.literal(ids), "only");
        }
        return out;
    }

    /** The results in the order of {@link #selected()}. */
    public List<ExperimentResult> run(Consumer<String> progress) throws InterruptedException {
        List<Experiment> selected = selected();
        Map<Experiment, ExperimentResult> results = new HashMap<>();
        List<Experiment> ring = new ArrayList<>();
        List<Experiment> tap = new ArrayList<>();
        List<Experiment> vhost = new ArrayList<>();
        for (Experiment e : selected) {
            if (e.placeholder() != null) {
                results.put(e, ExperimentResult.placeholder(e));
            } else {
                (e.tap() != null ? tap : e.vhostUser() ? vhost : ring).add(e);
            }
        }
        runGroup("ring", ring, results, progress, this::runRing);
        runGroup("vhost-user", vhost, results, progress, this::runVhostUser);
        runGroup("tap", tap, results, progress, this::runTap);
        List<ExperimentResult> out = new ArrayList<>();
        for (Experiment e : selected) {
            out.add(results.get(e));
        }
        return out;
    }

    /** Failures of rows and of groups of rows, in the order they happened: those rows are reported as failed. */
    public List<Throwable> failures() {
        return failures;
    }

    /** Runs a group of rows, putting each finished row's result into {@code results}. */
    interface Group {
        void run(List<Experiment> rows, Map<Experiment, ExperimentResult> results, Consumer<String> progress)
                throws InterruptedException;
    }

    /**
     * Runs {@code group} over {@code rows}, when there are any. A row whose run fails (not exact, a stall) leaves its
     * schedule and the others go on ({@link AdaptivePairs}; {@link #result}). When the group itself fails (setting up
     * its device process or back-end, or an Error such as an AssertionError from a run), every row of it without a
     * result is reported as failed, naming the failure, which is kept in {@link #failures()}, and the other groups
     * still run: the rows that finished, in this group and in the others, are written, and the command still ends in
     * failure. A VirtualMachineError (out of memory, stack overflow) is not caught: the JVM that threw it is no longer
     * to be trusted to measure or to write, and it ends the command with its own trace. An interrupt ends it too.
     */
    void runGroup(String kind, List<Experiment> rows, Map<Experiment, ExperimentResult> results,
                  Consumer<String> progress, Group group) throws InterruptedException {
        if (rows.isEmpty()) {
            return;
        }
        try {
            group.run(rows, results, progress);
        } catch (InterruptedException | VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            failures.add(e);
            String why = "failed: the " + kind + " rows stopped at " + e;
            for (Experiment x : rows) {
                results.putIfAbsent(x, ExperimentResult.failed(x, why));
            }
            progress.accept(why);
        }
    }

    /** A row's result from its outcome: measured, or failed (the failure kept in {@link #failures()}). */
    private ExperimentResult result(Experiment e, AdaptivePairs.Outcome o, Map<String, Object> details) {
        if (o.failure() == null) {
            return ExperimentResult.measured(e, o, details);
        }
        failures.add(o.failure());
        return ExperimentResult.failed(e, "failed: " + o.failure());
    }

    /**
     * The ring rows on one {@link AdaptivePairs} schedule; the two-process rows share one device JVM, started only when
     * a selected row needs it and stopped when all are done.
     */
    private void runRing(List<Experiment> ring, Map<Experiment, ExperimentResult> results, Consumer<String> progress)
            throws InterruptedException {
        TwoProcessBenchmark two = null;
        try {
            List<AdaptivePairs.Row> rows = new ArrayList<>();
            for (Experiment e : ring) {
                BenchRunner runner = BenchRunner.IN_PROCESS;
                if (e.processes() == 2) {
                    if (two == null) {
                        progress.accept(e.id() + ": starting the device process");
                        two = startDeviceProcess();
                    }
                    runner = two::run;
                }
                rows.add(new AdaptivePairs.Row(Interleaved.sides(runner, e.configA(), e.configB()),
                        e.configA(), e.configB(), e.metric(), s -> progress.accept(e.id() + ": " + s)));
            }
            List<AdaptivePairs.Outcome> done = AdaptivePairs.run(rows, ringStopping, warmup, System::nanoTime);
            for (int i = 0; i < ring.size(); i++) {
                results.put(ring.get(i), result(ring.get(i), done.get(i), null));
            }
        } finally {
            if (two != null) {
                two.close();
            }
        }
    }

    private static TwoProcessBenchmark startDeviceProcess() throws InterruptedException {
        try {
            return TwoProcessBenchmark.start();
        } catch (IOException e) {
            throw new BenchmarkFailedException("cannot start the device process: " + e, e);
        }
    }

    /**
     * The vhost-user rows on one {@link AdaptivePairs} schedule of their own; one back-end per notification mode,
     * built when a selected row first needs it and stopped when all are done.
     */
    private void runVhostUser(List<Experiment> vhost, Map<Experiment, ExperimentResult> results,
                              Consumer<String> progress) throws InterruptedException {
        try (VhostUserTxBench bench = new VhostUserTxBench(vhostWindowSeconds)) {
            List<AdaptivePairs.Row> rows = new ArrayList<>();
            List<RunLogs> logs = new ArrayList<>();
            for (Experiment e : vhost) {
                RunLogs log = new RunLogs(bench::runLog);
                logs.add(log);
                rows.add(new AdaptivePairs.Row(log.sides(Interleaved.sides(bench::run, e.configA(), e.configB())),
                        e.configA(), e.configB(), e.metric(), s -> progress.accept(e.id() + ": " + s)));
            }
            List<AdaptivePairs.Outcome> done = AdaptivePairs.run(rows, vhostStopping, warmup, System::nanoTime);
            for (int i = 0; i < vhost.size(); i++) {
                Experiment e = vhost.get(i);
                results.put(e, result(e, done.get(i), logs.get(i).details(bench.describe(e.base().mode()), warmup)));
            }
        }
    }

    private void runTap(List<Experiment> tap, Map<Experiment, ExperimentResult> results, Consumer<String> progress)
            throws InterruptedException {
        progress.accept(tap.getFirst().id() + ": setting up tap, namespace and load generator");
        NetPollBench bench = NetPollBench.start(netWindowSeconds, 60 + tap.size() * 2.0 * (warmup + tapPairs)
                * (netWindowSeconds + 3));
        try {
            for (Experiment e : tap) {
                RunLogs log = new RunLogs(bench::runLog);
                Interleaved.Sides sides = log.sides(side -> bench.run(side == Interleaved.Side.A ? e.tap().a() : e.tap().b()));
                AdaptivePairs.Row row = new AdaptivePairs.Row(sides, e.base(), e.base(), e.metric(),
                        s -> progress.accept(e.id() + ": " + s));
                AdaptivePairs.Outcome o = AdaptivePairs.run(List.of(row), AdaptivePairs.Stopping.fixed(tapPairs),
                        warmup, System::nanoTime).getFirst();
                results.put(e, result(e, o, log.details(bench.describe(), warmup)));
            }
        } finally {
            String sent = bench.stop();
            progress.accept("load generator: " + sent);
        }
    }

    /**
     * One row's per-run log entries (a bench's {@link NetPollBench#runLog() runLog} entry of each of its runs), by
     * side: the pairs alternate their order, and rows sharing a bench take turns, so position in the bench's log
     * says nothing.
     */
    private static final class RunLogs {
        private final Supplier<List<Map<String, Object>>> benchLog;
        private final List<Map<String, Object>> a = new ArrayList<>();
        private final List<Map<String, Object>> b = new ArrayList<>();

        RunLogs(Supplier<List<Map<String, Object>>> benchLog) {
            this.benchLog = benchLog;
        }

        /** {@code sides}, keeping each run's log entry on its side. */
        Interleaved.Sides sides(Interleaved.Sides sides) {
            return side -> {
                RunResult r = sides.run(side);
                (side == Interleaved.Side.A ? a : b).add(benchLog.get().getLast());
                return r;
            };
        }

        /** The row's details: the set-up, the measured runs' entries (after the warm-up pairs') and their medians. */
        Map<String, Object> details(Map<String, Object> config, int warmup) {
            List<Map<String, Object>> ma = new ArrayList<>(a.subList(warmup, a.size()));
            List<Map<String, Object>> mb = new ArrayList<>(b.subList(warmup, b.size()));
            Map<String, Object> details = new LinkedHashMap<>();
            details.put("setup", config);
            details.put("measured_runs", bySide(ma, mb));
            details.put("medians", bySide(medians(ma), medians(mb)));
            return details;
        }
    }

    /** {"a": a, "b": b}, in that order. */
    private static Map<String, Object> bySide(Object a, Object b) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", a);
        m.put("b", b);
        return m;
    }

    /** The median of every numeric figure of one side's run log. */
    private static Map<String, Object> medians(List<Map<String, Object>> log) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (String key : log.isEmpty() ? Set.<String>of() : log.getFirst().keySet()) {
            if (!(log.getFirst().get(key) instanceof Number)) {
                continue;
            }
            double[] v = log.stream().mapToDouble(x -> ((Number) x.get(key)).doubleValue()).toArray();
            m.put(key, Summary.of(v).median());
        }
        return m;
    }

    public static void write(List<ExperimentResult> results, Path dir, String how) throws IOException {
        Files.createDirectories(dir);
        List<Object> json = new ArrayList<>();
        for (ExperimentResult r : results) {
            json.add(r.toJson());
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("how", how);
        root.put("experiments", json);
        Files.writeString(dir.resolve("experiments.json"), Json.write(root));
        Files.writeString(dir.resolve("experiments.md"), markdown(results, how));
        for (ExperimentResult r : results) {
            if (r.pairs() != null) {
                Chart.write(r, dir.resolve(r.experiment().id() + ".png"));
            }
        }
    }

    /**
     * The table (one row per experiment: its figure's medians, B/A with its interval and half-width, outliers, time,
     * CPU per buffer and the mechanism's counter beside it, verdict), then per experiment the claim and what the
     * table has no room for.
     */
    public static String markdown(List<ExperimentResult> results, String how) {
        StringBuilder sb = new StringBuilder();
        sb.append("| experiment | A | B | figure | A median | B median | B/A | 95% CI | ± | claimed | pairs | outliers "
                + "| s | CPU ns/buffer A → B | counter A → B | verdict |\n");
        sb.append("|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|---|\n");
        for (ExperimentResult r : results) {
            Experiment e = r.experiment();
            String claimed = Double.isNaN(e.claimedRatio()) ? "more kicks" : String.format(Locale.ROOT, "%.3f", e.claimedRatio());
            if (r.pairs() == null) {
                sb.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | - | - | - | - | - | %s | 0 | - | - | - | - | %s |%n",
                        e.id(), e.a(), e.b(), e.metric().label(), claimed, r.notMeasuredBecause()));
                continue;
            }
            Metric m = e.metric();
            PairedRatio ratio = r.ratio();
            String verdict = r.verdict() == Verdict.INCONCLUSIVE ? "inconclusive at ±" + percent(ratio.halfWidth())
                    : r.verdict().text() + size(r.verdict(), ratio, e.claimedRatio());
            sb.append(String.format(Locale.ROOT, "| %s | %s=%s | %s=%s | %s | %s | %s | %.3f | [%.3f, %.3f] | %s | %s "
                            + "| %d | %d | %.0f | %s | %s | %s |%n",
                    e.id(), e.key(), e.a(), e.key(), e.b(), m.label(),
                    m.format(m.summarize(r.pairs().aRuns()).median()), m.format(m.summarize(r.pairs().bRuns()).median()),
                    ratio.geoMean(), ratio.ciLow(), ratio.ciHigh(), percent(ratio.halfWidth()), claimed, r.pairs().size(),
                    r.outlierPairs().size(), r.seconds(), aToB(r, Metric.CPU_NS_PER_BUFFER), e.counter() == null ? "-"
                            : e.counter().label() + " " + aToB(r, e.counter()), verdict));
        }
        sb.append('\n');
        for (boolean vhostUser : new boolean[] {false, true}) {
            int rows = 0;
            int atTarget = 0;
            int budgetSpent = 0;
            double seconds = 0;
            for (ExperimentResult r : results) {
                if (r.pairs() != null && r.experiment().tap() == null && r.experiment().vhostUser() == vhostUser) {
                    rows++;
                    atTarget += r.stop() == AdaptivePairs.Stop.TARGET ? 1 : 0;
                    budgetSpent += r.stop() == AdaptivePairs.Stop.BUDGET ? 1 : 0;
                    seconds += r.seconds();
                }
            }
            if (atTarget + budgetSpent > 0) {
                String kind = vhostUser ? "vhost-user rows" : "ring rows";
                sb.append(String.format(Locale.ROOT, "Adaptive stopping: %d of %d %s reached the target half-width, %d "
                        + "stopped when the budget was spent; the %s took %.0f s.%n%n", atTarget, rows, kind, budgetSpent,
                        kind, seconds));
            }
        }
        for (ExperimentResult r : results) {
            sb.append("- **").append(r.experiment().id()).append("**: ").append(r.experiment().claim()).append('\n');
            if (r.pairs() == null) {
                continue;
            }
            sb.append(String.format(Locale.ROOT, "  - %d pairs in %.0f s (%s), half-width %s; pairs during which the "
                            + "probe changed state: %d%n", r.pairs().size(), r.seconds(), r.stop().text(),
                    percent(r.ratio().halfWidth()), r.pairsChangingState()));
            if (r.experiment().tap() == null && r.experiment().base().pattern() == TrafficPattern.RR) {
                sb.append("  - ").append(r.experiment().processes() == 1 ? "one process" : "two processes").append(", ")
                        .append(r.experiment().base().bufs()).append(" transactions a run; ")
                        .append(Metric.ROUND_TRIP_P50_NS.label()).append(' ').append(aToB(r, Metric.ROUND_TRIP_P50_NS))
                        .append(", ").append(Metric.ROUND_TRIP_P99_NS.label()).append(' ')
                        .append(aToB(r, Metric.ROUND_TRIP_P99_NS)).append('\n');
            }
            if (r.experiment().vhostUser()) {
                // the mechanism behind both figures: how often avail.idx and avail entries were stored and the back-end
                // kicked per frame
                sb.append("  - vhost-user, back-end serve net rxonly ").append(r.experiment().base().mode().name()
                                .toLowerCase(Locale.ROOT)).append("; ").append(Metric.AVAIL_IDX_WRITES_PER_BUFFER.label())
                        .append(' ').append(aToB(r, Metric.AVAIL_IDX_WRITES_PER_BUFFER)).append(", ")
                        .append(Metric.AVAIL_ENTRY_WRITES_PER_BUFFER.label()).append(' ')
                        .append(aToB(r, Metric.AVAIL_ENTRY_WRITES_PER_BUFFER)).append(", ")
                        .append(Metric.KICKS_PER_BUFFER.label()).append(' ').append(aToB(r, Metric.KICKS_PER_BUFFER))
                        .append("; every run exact (back-end received = driver sent)\n");
            }
            if (!r.outlierPairs().isEmpty()) {
                StringBuilder o = new StringBuilder();
                for (int pair : r.outlierPairs()) {
                    o.append(String.format(Locale.ROOT, "%s#%d %.3f (probe %.0f ns)", o.isEmpty() ? "" : ", ", pair,
                            r.ratio().ratios()[pair - 1], CacheStates.pairProbe(r.pairs(), pair - 1)));
                }
                sb.append("  - outlier pairs (beyond ").append(PairedRatio.OUTLIER_MADS)
                        .append(" MAD of log B/A, kept in the interval): ").append(o).append('\n');
            }
            for (Map<String, Object> st : r.byState()) {
                List<?> probe = (List<?>) st.get("probe_ns");
                List<?> ci = (List<?>) st.get("ci95");
                sb.append(String.format(Locale.ROOT, "  - %s state (probe %.0f-%.0f ns): %d pairs, B/A %.3f%s%n",
                        st.get("state"), (Double) probe.get(0), (Double) probe.get(1), (Integer) st.get("pairs"),
                        (Double) st.get("ratio"), Double.isNaN((Double) ci.get(0)) ? ""
                                : String.format(Locale.ROOT, " [%.3f, %.3f]", (Double) ci.get(0), (Double) ci.get(1))));
            }
            if (r.details() != null && r.details().get("medians") instanceof Map<?, ?> med) {
                sb.append("  - medians per run, A: ").append(med.get("a")).append('\n');
                sb.append("  - medians per run, B: ").append(med.get("b")).append('\n');
            }
        }
        sb.append("\n").append(how).append('\n');
        return sb.toString();
    }

    /**
     * For a reproduced claim whose claimed ratio lies outside the interval, whether the effect measured is smaller or
     * larger than claimed (the direction holds, the size does not); empty otherwise.
     */
    static String size(Verdict v, PairedRatio r, double claimed) {
        if (v != Verdict.REPRODUCED || Double.isNaN(claimed) || r.contains(claimed)) {
            return "";
        }
        // both ends of the interval lie on the claimed side of 1: compare distances from 1 in log space
        return Math.abs(Math.log(r.ciHigh() * r.ciLow()) / 2) < Math.abs(Math.log(claimed))
                ? " (smaller effect than claimed)" : " (larger effect than claimed)";
    }

    /** A relative half-width in percent; beyond 1000% only that (a run too short to say anything). */
    static String percent(double halfWidth) {
        if (Double.isNaN(halfWidth)) {
            return "n/a";
        }
        return halfWidth > 10 ? ">1000%" : String.format(Locale.ROOT, "%.1f%%", 100 * halfWidth);
    }

    /** "A median → B median (B/A)" of a second figure. */
    private static String aToB(ExperimentResult r, Metric m) {
        PairedRatio q = r.pairs().ratio(m);
        return m.format(m.summarize(r.pairs().aRuns()).median()) + " → " + m.format(m.summarize(r.pairs().bRuns()).median())
                + (Double.isNaN(q.geoMean()) ? "" : String.format(Locale.ROOT, " (%.3f%s)", q.geoMean(),
                        q.hasInterval() ? " ±" + percent(q.halfWidth()) : ""));
    }
}
