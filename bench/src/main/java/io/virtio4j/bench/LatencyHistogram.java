package io.virtio4j.bench;

/**
 * A fixed log-linear histogram of latencies in nanoseconds, in the manner of HdrHistogram: values below 128 have a
 * bucket each; above, every power of two is split into 64 equal buckets, so a bucket is at most 1/64 (1.6 %) of its
 * values wide. Values from 0 to 2^40 ns (18 minutes) fit in {@value #BUCKETS} counters; larger ones are counted in
 * the last bucket. Exact minimum, maximum and sum are kept beside the buckets.
 *
 * <p>One writer: {@link #record} allocates nothing and takes no lock, for a thread that records its own
 * completions. Histograms of several threads are {@link #add}ed once those threads are done.
 */
public final class LatencyHistogram {
    /** Values below this have a bucket each. */
    private static final int LINEAR = 128;
    private static final int SUB_BITS = 6;
    private static final int HALF = 1 << SUB_BITS;
    /** The largest exponent kept apart: 2^40 ns. */
    private static final int MAX_MSB = 40;
    public static final int BUCKETS = (MAX_MSB - SUB_BITS + 1) * HALF + HALF;

    private final long[] counts = new long[BUCKETS];
    private long count;
    private long sum;
    private long min = Long.MAX_VALUE;
    private long max = Long.MIN_VALUE;

    /** The bucket of {@code value} (negative values, a clock that stepped back, count as 0). */
    static int index(long value) {
        if (value < LINEAR) {
            return (int) Math.max(0, value);
        }
        int msb = 63 - Long.numberOfLeadingZeros(value);
        if (msb > MAX_MSB) {
            return BUCKETS - 1;
        }
        int shift = msb - SUB_BITS;
        return shift * HALF + (int) (value >>> shift);
    }

    /** The smallest value of bucket {@code i}. */
    static long lowest(int i) {
        if (i < LINEAR) {
            return i;
        }
        int shift = i / HALF - 1;
        return (long) (i % HALF + HALF) << shift;
    }

    /** One past the largest value of bucket {@code i}. */
    static long highestExclusive(int i) {
        if (i < LINEAR) {
            return i + 1L;
        }
        int shift = i / HALF - 1;
        return (long) (i % HALF + HALF + 1) << shift;
    }

    public void record(long nanos) {
        long v = Math.max(0, nanos);
        counts[index(v)]++;
        count++;
        sum += v;
        if (v < min) {
            min = v;
        }
        if (v > max) {
            max = v;
        }
    }

    /** Adds {@code other}'s values to this one's. */
    public void add(LatencyHistogram other) {
        for (int i = 0; i < BUCKETS; i++) {
            counts[i] += other.counts[i];
        }
        count += other.count;
        sum += other.sum;
        min = Math.min(min, other.min);
        max = Math.max(max, other.max);
    }

    public long count() {
        return count;
    }

    /** The smallest value recorded, 0 when none was. */
    public long min() {
        return count == 0 ? 0 : min;
    }

    public long max() {
        return count == 0 ? 0 : max;
    }

    public double mean() {
        return count == 0 ? 0 : (double) sum / count;
    }

    /**
     * The value at or below which {@code percent} % of the values lie: the middle of the bucket that holds the
     * value of that rank (rank {@code ceil(percent / 100 * count)}), clamped to the exact minimum and maximum (the
     * maximum itself for a value beyond 2^40 ns); 0 when nothing was recorded.
     */
    public long percentile(double percent) {
        if (!(percent >= 0 && percent <= 100)) {
            throw new IllegalArgumentException("percentile " + percent + " is not in [0, 100]");
        }
        if (count == 0) {
            return 0;
        }
        long rank = Math.max(1, (long) Math.ceil(percent / 100.0 * count));
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += counts[i];
            if (seen >= rank) {
                if (i == BUCKETS - 1) {
                    return max; // the overflow bucket spans no range: its values are above 2^40
                }
                long mid = lowest(i) + (highestExclusive(i) - 1 - lowest(i)) / 2;
                return Math.min(max, Math.max(min, mid));
            }
        }
        return max;
    }
}
