package io.virtio4j.bench;

/**
 * The ratio B/A of one figure over runs made in pairs (A B, B A, ...), so a drift of the machine shifts both
 * members of a pair and cancels out. The interval is a Student t interval over the logarithms of the
 * per-pair ratios, transformed back: a geometric mean with its 95% confidence interval.
 *
 * @param ratios  per-pair B/A
 * @param geoMean geometric mean of the ratios
 * @param median  median of the ratios
 * @param ciLow   lower end of the 95% interval (NaN with fewer than two pairs or a non-positive value)
 * @param ciHigh  upper end of the 95% interval
 */
public record PairedRatio(double[] ratios, double geoMean, double median, double ciLow, double ciHigh) {

    /** Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom. */
    private static final double[] T975 = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060,
        2.056, 2.052, 2.048, 2.045, 2.042};

    static double t975(int df) {
        if (df < 1) {
            return Double.NaN;
        }
        if (df <= T975.length) {
            return T975[df - 1];
        }
        // beyond the table, the Cornish-Fisher expansion around the normal quantile (within 1e-4 from 31 degrees of
        // freedom on): adaptive stopping reaches hundreds of pairs, and a step function there (2.000 up to 60)
        // made intervals of 31..60 pairs up to 2% too narrow
        double z = 1.959963984540054;
        double z3 = z * z * z;
        double z5 = z3 * z * z;
        return z + (z3 + z) / (4.0 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96.0 * df * df);
    }

    public static PairedRatio of(double[] a, double[] b) {
        if (a.length != b.length || a.length == 0) {
            throw new IllegalArgumentException("need the same non-zero number of A and B values");
        }
        int n = a.length;
        double[] r = new double[n];
        boolean positive = true;
        for (int i = 0; i < n; i++) {
            r[i] = b[i] / a[i];
            positive &= a[i] > 0 && b[i] > 0;
        }
        double[] sorted = r.clone();
        java.util.Arrays.sort(sorted);
        double median = Summary.median(sorted);
        if (!positive) {
            return new PairedRatio(r, Double.NaN, median, Double.NaN, Double.NaN);
        }
        double mean = 0;
        for (double x : r) {
            mean += Math.log(x);
        }
        mean /= n;
        if (n < 2) {
            return new PairedRatio(r, Math.exp(mean), median, Double.NaN, Double.NaN);
        }
        double ss = 0;
        for (double x : r) {
            double d = Math.log(x) - mean;
            ss += d * d;
        }
        double half = t975(n - 1) * Math.sqrt(ss / (n - 1)) / Math.sqrt(n);
        return new PairedRatio(r, Math.exp(mean), median, Math.exp(mean - half), Math.exp(mean + half));
    }

    public boolean hasInterval() {
        return !Double.isNaN(ciLow);
    }

    /**
     * The interval's half-width relative to the ratio: the interval is [geoMean / (1 + h), geoMean * (1 + h)]
     * (a t interval over logarithms is symmetric around the log of the geometric mean), so {@code h = 0.03} reads
     * "B/A to within 3% either way". NaN without an interval.
     */
    public double halfWidth() {
        return hasInterval() ? Math.sqrt(ciHigh / ciLow) - 1 : Double.NaN;
    }

    /** Whether {@code ratio} lies inside the interval (false without one, or for a NaN ratio). */
    public boolean contains(double ratio) {
        return hasInterval() && ratio >= ciLow && ratio <= ciHigh;
    }

    /** Pairs whose log ratio lies further than this many (normal-consistent) MADs from the median log ratio. */
    public static final double OUTLIER_MADS = 3.0;
    /** Scales a MAD to the standard deviation it estimates for normally distributed data. */
    private static final double MAD_TO_SIGMA = 1.4826;

    /**
     * Indices (in pair order) of the pairs whose log B/A lies more than {@link #OUTLIER_MADS} scaled median absolute
     * deviations from the median log B/A: shown beside the interval, never dropped from it (a pair that ran while
     * another process held a CPU is part of what this machine does; dropping it would narrow the interval by fiat).
     * With a MAD of zero (more than half the pairs agree exactly) every pair off the median counts.
     */
    public int[] outliers() {
        int n = ratios.length;
        double[] logs = new double[n];
        for (int i = 0; i < n; i++) {
            logs[i] = ratios[i] > 0 ? Math.log(ratios[i]) : Double.NaN;
        }
        double[] sorted = logs.clone();
        java.util.Arrays.sort(sorted);
        if (n == 0 || Double.isNaN(sorted[n - 1])) {
            return new int[0]; // a non-positive ratio: no logarithms to compare (and no interval either)
        }
        double med = Summary.median(sorted);
        double[] dev = new double[n];
        for (int i = 0; i < n; i++) {
            dev[i] = Math.abs(logs[i] - med);
        }
        double[] devSorted = dev.clone();
        java.util.Arrays.sort(devSorted);
        double limit = OUTLIER_MADS * MAD_TO_SIGMA * Summary.median(devSorted);
        return java.util.stream.IntStream.range(0, n).filter(i -> dev[i] > limit).toArray();
    }
}
