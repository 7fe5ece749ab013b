package io.virtio4j.bench;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LatencyHistogramTest {

    @Test
    void everyValueFallsInTheBucketThatSpansIt() {
        SplittableRandom r = new SplittableRandom(7);
        for (int i = 0; i < 200_000; i++) {
            long v = r.nextLong(1L << r.nextInt(1, 41));
            int b = LatencyHistogram.index(v);
            assertTrue(LatencyHistogram.lowest(b) <= v && v < LatencyHistogram.highestExclusive(b), v + " in bucket " + b);
        }
        for (int b = 0; b < LatencyHistogram.BUCKETS - 1; b++) {
            // contiguous: no value is in two buckets or in none
            assertEquals(LatencyHistogram.highestExclusive(b), LatencyHistogram.lowest(b + 1), "bucket " + b);
            assertEquals(b, LatencyHistogram.index(LatencyHistogram.lowest(b)));
        }
    }

    @Test
    void aBucketIsAtMostOneSixtyFourthOfItsValuesWide() {
        for (int b = 128; b < LatencyHistogram.BUCKETS; b++) {
            long lo = LatencyHistogram.lowest(b);
            long width = LatencyHistogram.highestExclusive(b) - lo;
            assertTrue(width * 64 <= lo, "bucket " + b + " [" + lo + ", +" + width + ")");
        }
    }

    @Test
    void percentilesMatchTheSortedValuesWithinTheBucketPrecision() {
        SplittableRandom r = new SplittableRandom(11);
        long[] values = new long[100_001];
        LatencyHistogram h = new LatencyHistogram();
        for (int i = 0; i < values.length; i++) {
            // a long tail: mostly ~20 us, some ~ms
            values[i] = r.nextInt(100) == 0 ? r.nextLong(1_000_000, 5_000_000) : r.nextLong(10_000, 30_000);
            h.record(values[i]);
        }
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        for (double p : new double[] {0, 1, 50, 90, 99, 99.9, 99.99, 100}) {
            long exact = sorted[(int) Math.max(0, Math.ceil(p / 100 * values.length) - 1)];
            long got = h.percentile(p);
            assertTrue(Math.abs(got - exact) <= exact / 64 + 1, "p" + p + ": " + got + " vs " + exact);
        }
        assertEquals(sorted[0], h.min());
        assertEquals(sorted[sorted.length - 1], h.max());
        assertEquals(Arrays.stream(values).average().orElseThrow(), h.mean(), 1e-6);
        assertEquals(values.length, h.count());
    }

    @Test
    void mergedHistogramsAreTheHistogramOfAllValues() {
        LatencyHistogram a = new LatencyHistogram();
        LatencyHistogram b = new LatencyHistogram();
        LatencyHistogram all = new LatencyHistogram();
        SplittableRandom r = new SplittableRandom(3);
        for (int i = 0; i < 10_000; i++) {
            long v = r.nextLong(1, 10_000_000);
            (i % 3 == 0 ? a : b).record(v);
            all.record(v);
        }
        a.add(b);
        assertEquals(all.count(), a.count());
        assertEquals(all.min(), a.min());
        assertEquals(all.max(), a.max());
        assertEquals(all.mean(), a.mean(), 1e-9);
        for (double p : new double[] {50, 99, 99.9}) {
            assertEquals(all.percentile(p), a.percentile(p), "p" + p);
        }
    }

    @Test
    void extremesAreKeptAndNothingRecordedReadsZero() {
        LatencyHistogram h = new LatencyHistogram();
        assertEquals(0, h.percentile(99));
        assertEquals(0, h.min());
        assertEquals(0, h.max());
        h.record(-5); // a clock that stepped back counts as 0
        h.record(Long.MAX_VALUE);
        assertEquals(0, h.min());
        assertEquals(Long.MAX_VALUE, h.max());
        assertEquals(Long.MAX_VALUE, h.percentile(100));
        assertEquals(0, h.percentile(50));
        assertThrows(IllegalArgumentException.class, () -> h.percentile(100.5));
        assertThrows(IllegalArgumentException.class, () -> h.percentile(Double.NaN));
    }
}
