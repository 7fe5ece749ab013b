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

    /**
     * @param only lesson or row ids to run; empty for all
     */
    public ExperimentRunner(long bufs, int runs, int warmup, Set<String> only) {
        this.bufs = bufs;
        this.runs = runs;
        this.warmup = warmup;
        this.only = only;
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
            throw new IllegalArgumentException("--only " + only + " matches no experiment; known: " + ids);
        }
        return out;
    }

    public List<ExperimentResult> run(Consumer<String> progress) throws InterruptedException {
        List<ExperimentResult> results = new ArrayList<>();
        for (Experiment e : selected()) {
            if (e.placeholder() != null) {
                results.add(ExperimentResult.placeholder(e));
                continue;
            }
            Interleaved.Pairs p = Interleaved.run(BenchRunner.IN_PROCESS, e.configA(), e.configB(), warmup, runs, s -> progress.accept(e.id() + ": " + s));
            results.add(ExperimentResult.measured(e, p));
        }
        return results;
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
        }
        sb.append("\n").append(how).append('\n');
        return sb.toString();
    }
}
