package io.virtio4j.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/** Runs the lesson experiments and writes {@code experiments.json}, {@code experiments.md} and one PNG each. */
public final class ExperimentRunner {
    private final long bufs;
    private final int runs;
    private final int warmup;
    private final Set<String> only;
    private final double netWindowSeconds;

    /**
     * @param only lesson or row ids to run; empty for all
     */
    public ExperimentRunner(long bufs, int runs, int warmup, Set<String> only) {
        this(bufs, runs, warmup, only, 3.0);
    }

    /**
     * @param netWindowSeconds measuring window of each run of the tap back-end experiments
     */
    public ExperimentRunner(long bufs, int runs, int warmup, Set<String> only, double netWindowSeconds) {
        this.bufs = bufs;
        this.runs = runs;
        this.warmup = warmup;
        this.only = only;
        this.netWindowSeconds = netWindowSeconds;
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

    public List<ExperimentResult> run(Consumer<String> progress) throws InterruptedException {
        List<ExperimentResult> results = new ArrayList<>();
        List<Experiment> selected = selected();
        NetPollBench net = null;
        try {
            for (Experiment e : selected) {
                if (e.placeholder() != null) {
                    results.add(ExperimentResult.placeholder(e));
                    continue;
                }
                Consumer<String> p = s -> progress.accept(e.id() + ": " + s);
                if (e.tap() == null) {
                    Interleaved.Pairs pairs = Interleaved.run(BenchRunner.IN_PROCESS, e.configA(), e.configB(), warmup, runs, p);
                    results.add(ExperimentResult.measured(e, pairs));
                    continue;
                }
                if (net == null) {
                    p.accept("setting up tap, namespace and load generator");
                    net = NetPollBench.start(netWindowSeconds, netBudgetSeconds(selected));
                }
                NetPollBench bench = net;
                int logged = bench.runLog().size();
                Interleaved.Pairs pairs = Interleaved.runSides(
                        side -> bench.run(side == Interleaved.Side.A ? e.tap().a() : e.tap().b()),
                        e.base(), e.base(), warmup, runs, p);
                Map<String, Object> details = new LinkedHashMap<>();
                details.put("config", bench.describe());
                List<Map<String, Object>> log = bench.runLog().subList(logged, bench.runLog().size());
                details.put("measured_runs", new ArrayList<>(log.subList(2 * warmup, log.size())));
                details.put("medians", medians(log.subList(2 * warmup, log.size())));
                results.add(ExperimentResult.measured(e, pairs, details));
            }
        } finally {
            if (net != null) {
                String sent = net.stop();
                progress.accept("load generator: " + sent);
            }
        }
        return results;
    }

    /** Upper bound of the tap experiments' duration: the load generator stops by itself after it. */
    private double netBudgetSeconds(List<Experiment> selected) {
        long tapRows = selected.stream().filter(x -> x.tap() != null).count();
        return 60 + tapRows * 2.0 * (warmup + runs) * (netWindowSeconds + 3);
    }

    /** Per side (A = even positions, B = odd), the median of every numeric figure of the run log. */
    private static Map<String, Object> medians(List<Map<String, Object>> log) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int side = 0; side < 2; side++) {
            Map<String, Object> m = new LinkedHashMap<>();
            for (String key : log.isEmpty() ? Set.<String>of() : log.get(0).keySet()) {
                if (!(log.get(0).get(key) instanceof Number)) {
                    continue;
                }
                List<Double> v = new ArrayList<>();
                for (int i = side; i < log.size(); i += 2) {
                    v.add(((Number) log.get(i).get(key)).doubleValue());
                }
                double[] a = v.stream().mapToDouble(Double::doubleValue).toArray();
                m.put(key, Summary.of(a).median());
            }
            out.put(side == 0 ? "a" : "b", m);
        }
        return out;
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

    public static String markdown(List<ExperimentResult> results, String how) {
        StringBuilder sb = new StringBuilder();
        sb.append("| experiment | A | B | figure | A median | B median | B/A | 95% CI | claimed | runs | verdict |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (ExperimentResult r : results) {
            Experiment e = r.experiment();
            String claimed = Double.isNaN(e.claimedRatio()) ? "more kicks" : String.format(Locale.ROOT, "%.3f", e.claimedRatio());
            if (r.pairs() == null) {
                sb.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | - | - | - | - | %s | 0 | %s |%n",
                        e.id(), e.a(), e.b(), e.metric().label(), claimed, e.placeholder()));
                continue;
            }
            Metric m = e.metric();
            sb.append(String.format(Locale.ROOT, "| %s | %s=%s | %s=%s | %s | %s | %s | %.3f | [%.3f, %.3f] | %s | %d | %s |%n",
                    e.id(), e.key(), e.a(), e.key(), e.b(), m.label(),
                    m.format(m.summarize(r.pairs().aRuns()).median()), m.format(m.summarize(r.pairs().bRuns()).median()),
                    r.ratio().geoMean(), r.ratio().ciLow(), r.ratio().ciHigh(), claimed, r.pairs().aRuns().size(),
                    r.verdict().text()));
        }
        sb.append('\n');
        for (ExperimentResult r : results) {
            sb.append("- **").append(r.experiment().id()).append("**: ").append(r.experiment().claim()).append('\n');
            if (r.details() != null && r.details().get("medians") instanceof Map<?, ?> med) {
                sb.append("  - medians per run, A: ").append(med.get("a")).append('\n');
                sb.append("  - medians per run, B: ").append(med.get("b")).append('\n');
            }
        }
        sb.append("\n").append(how).append('\n');
        return sb.toString();
    }
}
