package io.virtio4j.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The measured outcome of one {@link Experiment}.
 *
 * @param experiment what was run
 * @param pairs      the interleaved runs, or null for a placeholder
 * @param ratio      B/A of the experiment's figure, or null for a placeholder
 * @param verdict    computed from the ratio's interval and the claim's direction
 * @param details    what else an experiment that is no ring benchmark reports (its set-up, per-run counters), or
 *                   null
 */
public record ExperimentResult(Experiment experiment, Interleaved.Pairs pairs, PairedRatio ratio, Verdict verdict,
                               Map<String, Object> details) {

    public static ExperimentResult placeholder(Experiment e) {
        return new ExperimentResult(e, null, null, Verdict.NOT_MEASURED, null);
    }

    public static ExperimentResult measured(Experiment e, Interleaved.Pairs pairs) {
        return measured(e, pairs, null);
    }

    /** The one place ratio and verdict are computed, for every kind of experiment. */
    public static ExperimentResult measured(Experiment e, Interleaved.Pairs pairs, Map<String, Object> details) {
        PairedRatio r = pairs.ratio(e.metric());
        return new ExperimentResult(e, pairs, r, Verdict.of(r, e.expectsIncrease()), details);
    }

    public Map<String, Object> toJson() {
        Experiment e = experiment;
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("id", e.id());
        j.put("lesson", e.lesson());
        j.put("claim", e.claim());
        j.put("metric", e.metric().key());
        j.put("claimed_ratio", e.claimedRatio());
        if (pairs == null) {
            j.put("a", Map.of("label", e.a()));
            j.put("b", Map.of("label", e.b()));
            j.put("ratio", null);
            j.put("ci95", null);
            j.put("verdict", e.placeholder());
            j.put("status", "placeholder");
            return j;
        }
        if (e.tap() == null) {
            j.put("config", new LinkedHashMap<>(e.base().toMap()));
        }
        if (details != null) {
            j.putAll(details);
        }
        j.put("runs", pairs.aRuns().size());
        j.put("a", side(e.key() + "=" + e.a(), pairs.aRuns()));
        j.put("b", side(e.key() + "=" + e.b(), pairs.bRuns()));
        j.put("ratio", ratio.geoMean());
        j.put("ratio_per_pair", ratio.ratios());
        Map<String, Object> ci = new LinkedHashMap<>();
        ci.put("low", ratio.ciLow());
        ci.put("high", ratio.ciHigh());
        j.put("ci95", ci);
        j.put("verdict", verdict.text());
        Map<String, Object> more = new LinkedHashMap<>();
        for (Metric m : List.of(Metric.BUFFERS_PER_S, Metric.NS_PER_BUFFER, Metric.DRIVER_CPU_MS, Metric.DEVICE_CPU_MS,
                Metric.KICKS_PER_BUFFER, Metric.NOTIFICATIONS_PER_BUFFER, Metric.AVAIL_IDX_READS_PER_BUFFER,
                Metric.AVAIL_IDX_WRITES_PER_BUFFER, Metric.PROBE_NS)) {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("a_median", m.summarize(pairs.aRuns()).median());
            f.put("b_median", m.summarize(pairs.bRuns()).median());
            PairedRatio r = pairs.ratio(m);
            f.put("ratio", r.geoMean());
            f.put("ci95", List.of(r.ciLow(), r.ciHigh()));
            more.put(m.key(), f);
        }
        j.put("figures", more);
        return j;
    }

    private Map<String, Object> side(String label, List<RunResult> runs) {
        Summary s = experiment.metric().summarize(runs);
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("label", label);
        j.put("values", s.values());
        j.put("median", s.median());
        return j;
    }
}
