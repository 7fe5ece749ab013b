package io.virtio4j.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The measured outcome of one {@link Experiment}.
 *
 * @param experiment what was run
 * @param pairs      the interleaved runs, or null for a placeholder
 * @param ratio      B/A of the experiment's figure, or null for a placeholder
 * @param verdict    computed from the ratio's interval, the claim's direction and the claimed ratio
 * @param details    what else an experiment that is no ring benchmark reports (its set-up, per-run counters), or
 *                   null
 * @param seconds    time its warm-up and measured pairs took (NaN for a placeholder)
 * @param stop       why it got no more pairs (null for a placeholder)
 */
public record ExperimentResult(Experiment experiment, Interleaved.Pairs pairs, PairedRatio ratio, Verdict verdict,
                               Map<String, Object> details, double seconds, AdaptivePairs.Stop stop) {

    public static ExperimentResult placeholder(Experiment e) {
        return new ExperimentResult(e, null, null, Verdict.NOT_MEASURED, null, Double.NaN, null);
    }

    /** A row that did not finish: {@code why} says what stopped it (on one line, with no table separator). */
    public static ExperimentResult failed(Experiment e, String why) {
        return new ExperimentResult(e, null, null, Verdict.NOT_MEASURED,
                Map.of(FAILURE, why.replace('\n', ' ').replace('|', '/')), Double.NaN, null);
    }

    private static final String FAILURE = "failure";

    /** Whether the row was to be measured and did not finish. */
    public boolean failed() {
        return pairs == null && details != null && details.containsKey(FAILURE);
    }

    /** For a row without pairs: what stopped it, or why it cannot run yet (a placeholder); null for a measured row. */
    public String notMeasuredBecause() {
        return pairs != null ? null : failed() ? (String) details.get(FAILURE) : experiment.placeholder();
    }

    /** The one place ratio and verdict are computed, for every kind of experiment. */
    public static ExperimentResult measured(Experiment e, AdaptivePairs.Outcome o, Map<String, Object> details) {
        PairedRatio r = o.pairs().ratio(e.metric());
        return new ExperimentResult(e, o.pairs(), r, Verdict.of(r, e.expectsIncrease(), e.claimedRatio()), details,
                o.seconds(), o.stop());
    }

    /** Figures every row reports beside its own, each as medians and a ratio with its interval. */
    static final List<Metric> FIGURES = List.of(Metric.BUFFERS_PER_S, Metric.NS_PER_BUFFER, Metric.CPU_NS_PER_BUFFER,
            Metric.DRIVER_CPU_MS, Metric.DEVICE_CPU_MS, Metric.KICKS_PER_BUFFER, Metric.NOTIFICATIONS_PER_BUFFER,
            Metric.AVAIL_IDX_READS_PER_BUFFER, Metric.AVAIL_IDX_WRITES_PER_BUFFER, Metric.AVAIL_ENTRY_WRITES_PER_BUFFER,
            Metric.STRONG_FENCES_PER_BUFFER, Metric.ROUND_TRIP_P50_NS, Metric.ROUND_TRIP_P99_NS, Metric.PROBE_NS);

    /** Pair numbers (from 1) of the outliers of the row's figure. */
    public List<Integer> outlierPairs() {
        List<Integer> out = new ArrayList<>();
        for (int i : ratio.outliers()) {
            out.add(i + 1);
        }
        return out;
    }

    /** Pairs during which the probe saw the machine change state. */
    public int pairsChangingState() {
        int k = 0;
        for (int i = 0; i < pairs.size(); i++) {
            k += CacheStates.changedState(pairs, i) ? 1 : 0;
        }
        return k;
    }

    /**
     * When the pairs ran in two cache states, the ratio of the row's figure over the pairs of each, low probe level
     * first (the pairs of both are all in the row's own interval); empty when they ran in one.
     */
    public List<Map<String, Object>> byState() {
        double[] probes = new double[pairs.size()];
        for (int i = 0; i < probes.length; i++) {
            probes[i] = CacheStates.pairProbe(pairs, i);
        }
        double t = CacheStates.threshold(probes);
        if (Double.isNaN(t)) {
            return List.of();
        }
        Metric m = experiment.metric();
        List<Map<String, Object>> out = new ArrayList<>();
        for (boolean low : new boolean[] {true, false}) {
            List<Double> a = new ArrayList<>();
            List<Double> b = new ArrayList<>();
            double lo = Double.MAX_VALUE;
            double hi = 0;
            for (int i = 0; i < probes.length; i++) {
                if (probes[i] < t == low && !Double.isNaN(probes[i])) {
                    a.add(m.of(pairs.aRuns().get(i)));
                    b.add(m.of(pairs.bRuns().get(i)));
                    lo = Math.min(lo, probes[i]);
                    hi = Math.max(hi, probes[i]);
                }
            }
            PairedRatio r = PairedRatio.of(a.stream().mapToDouble(Double::doubleValue).toArray(),
                    b.stream().mapToDouble(Double::doubleValue).toArray());
            Map<String, Object> j = new LinkedHashMap<>();
            j.put("state", low ? "near" : "far");
            j.put("probe_ns", List.of(lo, hi));
            j.put("pairs", a.size());
            j.put("ratio", r.geoMean());
            j.put("ci95", List.of(r.ciLow(), r.ciHigh()));
            j.put("half_width", r.halfWidth());
            out.add(j);
        }
        return out;
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
            j.put("verdict", notMeasuredBecause());
            j.put("status", failed() ? "failed" : "placeholder");
            return j;
        }
        if (e.tap() == null) {
            // a vhost-user row follows only some of the options (the others are the back-end's, as serve net has them)
            j.put("config", new LinkedHashMap<>(e.vhostUser() ? VhostUserTxBench.followed(e.base()) : e.base().toMap()));
            j.put("processes", e.processes());
        }
        if (e.vhostUser()) {
            j.put("backend", "vhost-user");
        }
        if (details != null) {
            j.putAll(details);
        }
        j.put("pairs", pairs.size());
        j.put("seconds", seconds);
        j.put("stopped", stop.text());
        j.put("a", side(e.key() + "=" + e.a(), pairs.aRuns()));
        j.put("b", side(e.key() + "=" + e.b(), pairs.bRuns()));
        j.put("ratio", ratio.geoMean());
        Map<String, Object> ci = new LinkedHashMap<>();
        ci.put("low", ratio.ciLow());
        ci.put("high", ratio.ciHigh());
        j.put("ci95", ci);
        j.put("half_width", ratio.halfWidth());
        j.put("claimed_inside_ci", ratio.contains(e.claimedRatio()));
        j.put("verdict", verdict.text());
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("rule", "|log B/A - median| > " + PairedRatio.OUTLIER_MADS
                + " x 1.4826 x MAD; kept in the interval");
        out.put("count", outlierPairs().size());
        out.put("pairs", outlierPairs());
        j.put("outliers", out);
        j.put("pairs_changing_state", pairsChangingState());
        j.put("by_state", byState());
        j.put("per_pair", perPair());
        Map<String, Object> more = new LinkedHashMap<>();
        for (Metric m : FIGURES) {
            if (!m.shownFor(e.base())) {
                continue;
            }
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("a_median", m.summarize(pairs.aRuns()).median());
            f.put("b_median", m.summarize(pairs.bRuns()).median());
            PairedRatio r = pairs.ratio(m);
            f.put("ratio", r.geoMean());
            f.put("ci95", List.of(r.ciLow(), r.ciHigh()));
            f.put("half_width", r.halfWidth());
            more.put(m.key(), f);
        }
        j.put("figures", more);
        return j;
    }

    /** Every pair: its order, its figure on both sides, its ratio, its probe readings, whether it is an outlier. */
    private List<Map<String, Object>> perPair() {
        Metric m = experiment.metric();
        List<Integer> outliers = outlierPairs();
        List<Map<String, Object>> out = new ArrayList<>();
        for (int i = 0; i < pairs.size(); i++) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("order", Interleaved.aFirst(i) ? "AB" : "BA");
            p.put("a", m.of(pairs.aRuns().get(i)));
            p.put("b", m.of(pairs.bRuns().get(i)));
            p.put("ratio", ratio.ratios()[i]);
            List<Double> probes = new ArrayList<>();
            for (RunResult r : pairs.inRunOrder(i)) {
                probes.add(r.probeBeforeNanos());
                probes.add(r.probeAfterNanos());
            }
            p.put("probe_ns", probes);
            p.put("changed_state", CacheStates.changedState(pairs, i));
            p.put("outlier", outliers.contains(i + 1));
            out.add(p);
        }
        return out;
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
