package io.virtio4j.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Reads the cache-line probe ({@link PingPongProbe}) of interleaved pairs: which pairs changed state while they
 * ran, and, when the pairs fall into two probe levels (this VM's "near" and "far" states), which pair ran in
 * which, so each state's ratio can be shown on its own.
 */
public final class CacheStates {
    /**
     * Probe readings further apart than this factor are different states: the two states measured here are about
     * 4x apart (165 vs 680 ns) while readings within one state stay well inside 2x of each other.
     */
    public static final double STATE_FACTOR = 2.0;

    private CacheStates() {
    }

    /** Pair {@code i}'s probe: the median of the readings just before and after each of its two runs (NaN if none). */
    public static double pairProbe(Interleaved.Pairs p, int i) {
        double[] v = readings(p, i);
        if (v.length == 0) {
            return Double.NaN;
        }
        Arrays.sort(v);
        return Summary.median(v);
    }

    /** Whether pair {@code i}'s readings span more than {@link #STATE_FACTOR}: the machine changed state during it. */
    public static boolean changedState(Interleaved.Pairs p, int i) {
        double[] v = readings(p, i);
        if (v.length < 2) {
            return false;
        }
        Arrays.sort(v);
        return v[v.length - 1] > STATE_FACTOR * v[0];
    }

    private static double[] readings(Interleaved.Pairs p, int i) {
        List<Double> out = new ArrayList<>(4);
        for (RunResult r : p.inRunOrder(i)) {
            for (double x : new double[] {r.probeBeforeNanos(), r.probeAfterNanos()}) {
                if (x > 0 && Double.isFinite(x)) {
                    out.add(x);
                }
            }
        }
        return out.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /**
     * The probe level between two groups of pair probes: the geometric middle of the widest gap between
     * neighbouring sorted values, when that gap is wider than {@link #STATE_FACTOR}; NaN when the pairs all ran in
     * one state (or have no probe).
     */
    public static double threshold(double[] pairProbes) {
        double[] v = Arrays.stream(pairProbes).filter(x -> x > 0 && Double.isFinite(x)).sorted().toArray();
        double best = STATE_FACTOR;
        double at = Double.NaN;
        for (int k = 1; k < v.length; k++) {
            double gap = v[k] / v[k - 1];
            if (gap > best) {
                best = gap;
                at = Math.sqrt(v[k] * v[k - 1]);
            }
        }
        return at;
    }
}
