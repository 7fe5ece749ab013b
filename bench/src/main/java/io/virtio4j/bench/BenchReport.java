package io.virtio4j.bench;

import java.io.PrintStream;
import java.util.ArrayList;
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
}
