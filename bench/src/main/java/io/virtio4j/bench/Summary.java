package io.virtio4j.bench;

import java.util.Arrays;

/**
 * Descriptive statistics of one figure over runs.
 *
 * @param values    the per-run values, in run order
 * @param mean      arithmetic mean
 * @param median    median
 * @param stddev    sample standard deviation (0 for one run)
 * @param min       smallest value
 * @param max       largest value
 */
public record Summary(double[] values, double mean, double median, double stddev, double min, double max) {

    public static Summary of(double[] values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("no values");
        }
        double[] v = values.clone();
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        double sum = 0;
        for (double x : v) {
            sum += x;
        }
        double mean = sum / v.length;
        double ss = 0;
        for (double x : v) {
            ss += (x - mean) * (x - mean);
        }
        double sd = v.length > 1 ? Math.sqrt(ss / (v.length - 1)) : 0;
        return new Summary(v, mean, median(sorted), sd, sorted[0], sorted[sorted.length - 1]);
    }

    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /**
     * Relative standard error of the mean in percent: what {@code perf stat -r N} prints as "+- x%".
     */
    public double relativeStdErrorPercent() {
        if (values.length < 2 || mean == 0) {
            return 0;
        }
        return 100 * stddev / Math.sqrt(values.length) / Math.abs(mean);
    }
}
