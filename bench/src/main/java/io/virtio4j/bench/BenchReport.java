package io.virtio4j.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Prints runs in the manner of {@code perf stat -r N} and turns them into the JSON report. */
public final class BenchReport {
    private BenchReport() {
    }

    public static void print(PrintStream out, BenchConfig cfg, List<RunResult> runs) {
        out.printf(Locale.ROOT, "%n Ring benchmark stats for '%s' (%d runs, %,d buffers each):%n%n",
                cfg.describe(), runs.size(), cfg.bufs());
        for (Metric m : Metric.values()) {
            if (!m.shownFor(cfg)) {
                continue;
            }
            Summary s = m.summarize(runs);
            out.printf(Locale.ROOT, "  %22s  %-24s ( +- %5.2f%% )   median %s  [%s .. %s]%n",
                    m.format(s.mean()), m.label(), s.relativeStdErrorPercent(),
                    m.format(s.median()), m.format(s.min()), m.format(s.max()));
        }
        out.printf(Locale.ROOT, "%n  threads: %s%n", runs.get(0).pinning());
        out.println("  (mean, relative standard error of the mean as perf stat prints it, median, [min .. max])");
    }

    /** JSON: the configuration, every run's figures, and per figure the per-run values and their median. */
    public static Map<String, Object> toJson(BenchConfig cfg, List<RunResult> runs) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("config", new LinkedHashMap<>(cfg.toMap()));
        List<Object> perRun = new ArrayList<>();
        for (RunResult r : runs) {
            Map<String, Object> one = new LinkedHashMap<>();
            for (Metric m : Metric.values()) {
                one.put(m.key(), m.of(r));
            }
            one.put("pinning", r.pinning());
            perRun.add(one);
        }
        root.put("runs", perRun);
        Map<String, Object> summary = new LinkedHashMap<>();
        for (Metric m : Metric.values()) {
            summary.put(m.key(), summaryJson(m.summarize(runs)));
        }
        root.put("summary", summary);
        return root;
    }

    public static Map<String, Object> summaryJson(Summary s) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("values", s.values());
        j.put("median", s.median());
        j.put("mean", s.mean());
        j.put("stddev", s.stddev());
        j.put("rel_stderr_pct", s.relativeStdErrorPercent());
        j.put("min", s.min());
        j.put("max", s.max());
        return j;
    }

    /** Figures shown in an A/B comparison. */
    private static final Metric[] COMPARED = {Metric.BUFFERS_PER_S, Metric.NS_PER_BUFFER, Metric.CPU_NS_PER_BUFFER,
        Metric.DRIVER_CPU_MS,
        Metric.DEVICE_CPU_MS, Metric.KICKS_PER_BUFFER, Metric.NOTIFICATIONS_PER_BUFFER,
        Metric.AVAIL_IDX_READS_PER_BUFFER, Metric.AVAIL_IDX_WRITES_PER_BUFFER,
        Metric.AVAIL_ENTRY_WRITES_PER_BUFFER, Metric.USED_IDX_READS_PER_BUFFER, Metric.ROUND_TRIP_P50_NS, Metric.ROUND_TRIP_P99_NS, Metric.SPURIOUS_WAKEUPS, Metric.ALLOCATED_BYTES_PER_BUFFER,
        Metric.PROBE_NS, Metric.DIRTY_PAGES};

    public static void printComparison(PrintStream out, String key, Interleaved.Pairs p) {
        String a = key + "=" + p.a().toMap().get(key);
        String b = key + "=" + p.b().toMap().get(key);
        out.printf(Locale.ROOT, "%n Interleaved A/B (%d pairs, A B, B A, A B ..., %,d buffers each) of '%s'%n   A: %s%n   B: %s%n%n",
                p.aRuns().size(), p.a().bufs(), p.a().describe(), a, b);
        out.printf(Locale.ROOT, "  %-24s %16s %16s %10s  %-28s %s%n", "figure", "A median", "B median", "B/A",
                "95% CI of B/A, half-width", "outlier pairs");
        for (Metric m : COMPARED) {
            if (!m.shownFor(p.a()) && !m.shownFor(p.b())) {
                continue;
            }
            Summary sa = m.summarize(p.aRuns());
            Summary sb = m.summarize(p.bRuns());
            PairedRatio r = p.ratio(m);
            String ratio = Double.isNaN(r.geoMean()) ? "n/a" : String.format(Locale.ROOT, "%.4f", r.geoMean());
            String ci = r.hasInterval() ? String.format(Locale.ROOT, "[%.4f, %.4f] ±%s", r.ciLow(), r.ciHigh(),
                    ExperimentRunner.percent(r.halfWidth())) : "n/a";
            out.printf(Locale.ROOT, "  %-24s %16s %16s %10s  %-28s %d%n", m.label(), m.format(sa.median()),
                    m.format(sb.median()), ratio, ci, r.outliers().length);
        }
        out.println("\n  B/A is the geometric mean of the per-pair ratios; the interval is a t interval over their logs,"
                + " computed with the outlier pairs (log ratio beyond " + PairedRatio.OUTLIER_MADS + " MAD of the median).");
    }

    public static Map<String, Object> comparisonJson(String key, Interleaved.Pairs p) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("compare", key);
        root.put("a", toJson(p.a(), p.aRuns()));
        root.put("b", toJson(p.b(), p.bRuns()));
        Map<String, Object> ratios = new LinkedHashMap<>();
        for (Metric m : Metric.values()) {
            PairedRatio r = p.ratio(m);
            Map<String, Object> j = new LinkedHashMap<>();
            j.put("per_pair", r.ratios());
            j.put("geo_mean", r.geoMean());
            j.put("median", r.median());
            j.put("ci95", List.of(r.ciLow(), r.ciHigh()));
            j.put("half_width", r.halfWidth());
            // Json writes lists and double arrays: the pair numbers go boxed
            j.put("outlier_pairs", Arrays.stream(r.outliers()).boxed().toList());
            ratios.put(m.key(), j);
        }
        root.put("ratio_b_over_a", ratios);
        return root;
    }
}
