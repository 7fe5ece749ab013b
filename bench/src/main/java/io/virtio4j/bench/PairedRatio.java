package io.virtio4j.bench;

/**
 * The ratio B/A of one figure over runs made in pairs (A B A B ...), so a drift of the machine shifts both
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
        return df <= 60 ? 2.000 : df <= 120 ? 1.980 : 1.960;
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
}
