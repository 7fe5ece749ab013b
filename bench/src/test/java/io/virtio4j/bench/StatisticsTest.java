package io.virtio4j.bench;

import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StatisticsTest {

    @Test
    void summaryOfKnownValues() {
        Summary s = Summary.of(new double[] {4, 1, 3, 2});
        assertEquals(2.5, s.median());
        assertEquals(2.5, s.mean());
        assertEquals(Math.sqrt(5.0 / 3), s.stddev(), 1e-12);
        assertEquals(1, s.min());
        assertEquals(4, s.max());
        assertEquals(100 * Math.sqrt(5.0 / 3) / 2 / 2.5, s.relativeStdErrorPercent(), 1e-9);
    }

    @Test
    void pairedRatioIsTheGeometricMeanWithATInterval() {
        double[] a = {100, 200, 400};
        double[] b = {110, 220, 440};
        PairedRatio r = PairedRatio.of(a, b);
        assertEquals(1.1, r.geoMean(), 1e-12);
        assertEquals(1.1, r.ciLow(), 1e-12, "identical ratios: zero-width interval");
        assertEquals(1.1, r.ciHigh(), 1e-12);

        PairedRatio noisy = PairedRatio.of(new double[] {1, 1, 1, 1}, new double[] {1.2, 0.9, 1.1, 1.0});
        double mean = (Math.log(1.2) + Math.log(0.9) + Math.log(1.1) + Math.log(1.0)) / 4;
        double ss = 0;
        for (double x : new double[] {1.2, 0.9, 1.1, 1.0}) {
            ss += (Math.log(x) - mean) * (Math.log(x) - mean);
        }
        double half = 3.182 * Math.sqrt(ss / 3) / 2;
        assertEquals(Math.exp(mean - half), noisy.ciLow(), 1e-12);
        assertEquals(Math.exp(mean + half), noisy.ciHigh(), 1e-12);
    }

    /** B/A per pair of {@code ratios} over A = 1. */
    private static PairedRatio ratios(double... ratios) {
        double[] a = new double[ratios.length];
        java.util.Arrays.fill(a, 1);
        return PairedRatio.of(a, ratios);
    }

    @Test
    void verdictFollowsTheIntervalTheClaimsDirectionAndTheClaimedRatio() {
        PairedRatio up = ratios(1.5, 1.6, 1.55);
        assertEquals(Verdict.REPRODUCED, Verdict.of(up, true, 1.67));
        assertEquals(Verdict.REPRODUCED, Verdict.of(up, true, 1.2), "a larger effect than claimed is still the claim");
        assertEquals(Verdict.OPPOSITE, Verdict.of(up, false, 0.86));
        PairedRatio down = ratios(0.9, 0.92, 0.91);
        assertEquals(Verdict.REPRODUCED, Verdict.of(down, false, 0.86));
        assertEquals(Verdict.OPPOSITE, Verdict.of(down, true, 1.16));

        // tight around 1 (about +-1%): a -3.7% effect would lie outside, so the data can say it is not there
        PairedRatio tight = ratios(0.995, 1.005, 1.0, 0.998, 1.002, 1.001);
        assertTrue(tight.contains(1.0));
        assertFalse(tight.contains(0.963));
        assertEquals(Verdict.REFUTED, Verdict.of(tight, false, 0.963));
        assertEquals(Verdict.REFUTED, Verdict.of(tight, true, 1.05));

        // wide: holds 1 and the claimed 0.985, nothing can be said yet
        PairedRatio wide = ratios(0.9, 1.1, 1.0, 0.95);
        assertTrue(wide.contains(1.0) && wide.contains(0.985));
        assertEquals(Verdict.INCONCLUSIVE, Verdict.of(wide, false, 0.985));
        assertEquals(Verdict.INCONCLUSIVE, Verdict.of(tight, true, Double.NaN), "a claim with a direction only");

        assertEquals("", ExperimentRunner.size(Verdict.REPRODUCED, up, 1.55), "the claimed ratio inside: no remark");
        assertEquals(" (smaller effect than claimed)", ExperimentRunner.size(Verdict.REPRODUCED, up, 1.9));
        assertEquals(" (larger effect than claimed)", ExperimentRunner.size(Verdict.REPRODUCED, up, 1.2));
        assertEquals(" (larger effect than claimed)", ExperimentRunner.size(Verdict.REPRODUCED, down, 0.963));
        assertEquals(" (smaller effect than claimed)", ExperimentRunner.size(Verdict.REPRODUCED, down, 0.5));
        assertEquals("", ExperimentRunner.size(Verdict.OPPOSITE, up, 0.86));

        assertEquals(Verdict.NOT_MEASURED, Verdict.of(ratios(2), true, 2));
        assertEquals(Verdict.NOT_MEASURED, Verdict.of(ratios(1.1, 0), true, 1.1), "a zero figure has no log ratio");
    }

    @Test
    void halfWidthIsTheIntervalsRelativeHalfWidthAroundTheGeometricMean() {
        PairedRatio r = ratios(1.2, 0.9, 1.1, 1.0);
        double half = Math.log(r.ciHigh() / r.geoMean());
        assertEquals(Math.exp(half) - 1, r.halfWidth(), 1e-12);
        assertEquals(r.geoMean(), r.ciLow() * (1 + r.halfWidth()), 1e-12, "symmetric in log space");
        assertEquals(r.ciHigh(), r.geoMean() * (1 + r.halfWidth()), 1e-12);
        assertTrue(Double.isNaN(ratios(1.1).halfWidth()), "one pair: no interval, no half-width");

        // the same spread over four times the pairs: the half-width shrinks by the square root of four, and more
        // as the t quantile falls with the degrees of freedom (3.182 at 3, 2.131 at 15): about 3.3 in all
        double[] many = new double[16];
        for (int i = 0; i < many.length; i++) {
            many[i] = new double[] {1.2, 0.9, 1.1, 1.0}[i % 4];
        }
        double shrink = r.halfWidth() / ratios(many).halfWidth();
        assertTrue(shrink > 2 && shrink < 4, "shrink " + shrink);
    }

    @Test
    void outliersAreCountedAndStayInTheInterval() {
        double[] calm = {1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.01, 0.99};
        PairedRatio r = ratios(calm);
        assertEquals(0, r.outliers().length);

        double[] withOne = java.util.Arrays.copyOf(calm, calm.length + 1);
        withOne[calm.length] = 1.5;
        PairedRatio o = ratios(withOne);
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {calm.length}, o.outliers());
        assertEquals(withOne.length, o.ratios().length, "kept");
        assertTrue(o.ciHigh() > r.ciHigh() && o.halfWidth() > 2 * r.halfWidth(),
                "the interval is computed with the outlier: " + o.halfWidth() + " vs " + r.halfWidth());

        // an outlier on the low side, by the same rule (logs: 1/1.5 is as far below as 1.5 is above)
        withOne[calm.length] = 1 / 1.5;
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {calm.length}, ratios(withOne).outliers());
        // just inside the limit: 3 x 1.4826 x MAD of the calm logs is about 0.045 here
        withOne[calm.length] = 1.03;
        assertEquals(0, ratios(withOne).outliers().length);
    }

    @Test
    void machineLoadCountsEverythingButIdleAndIowait() {
        String before = "cpu  100 0 50 1000 10 0 5 0 0 0";
        // +60 user, +20 system, +100 idle, +20 iowait, +0 the rest (guest fields changed too: already in user)
        String after = "cpu  160 0 70 1100 30 0 5 0 40 0";
        assertEquals(80.0 / 200, MachineLoad.busyFraction(before, after), 1e-12);
        assertTrue(Double.isNaN(MachineLoad.busyFraction(before, before)), "no ticks, no fraction");
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> MachineLoad.busyFraction("cpu0 1 2 3 4 5", "cpu0 1 2 3 4 5"));
    }

    @Test
    void tQuantilesMatchTheTable() {
        assertEquals(12.706, PairedRatio.t975(1));
        assertEquals(2.262, PairedRatio.t975(9));
        assertEquals(2.042, PairedRatio.t975(30));
        // beyond the table (reference values of Student's t, 97.5% quantile)
        assertEquals(2.0395, PairedRatio.t975(31), 2e-4);
        assertEquals(2.0211, PairedRatio.t975(40), 2e-4);
        assertEquals(2.0003, PairedRatio.t975(60), 2e-4);
        assertEquals(1.9799, PairedRatio.t975(120), 2e-4);
        assertEquals(1.9623, PairedRatio.t975(1000), 2e-4);
        assertTrue(Double.isNaN(PairedRatio.t975(0)));
    }

    @Test
    void jsonEscapesAndNestsAndWritesNaNAsNull() {
        String j = Json.write(Map.of("k", List.of("a\"b\n", 1.5, Double.NaN, 3L)));
        assertEquals("{\n  \"k\": [\n    \"a\\\"b\\n\",\n    1.50000,\n    null,\n    3\n  ]\n}\n", j);
    }

    @Test
    void configOptionsRoundTripThroughTheirCommandLineNames() {
        BenchConfig c = BenchConfig.defaults().with("barriers", "strong").with("cached-avail", "off")
                .with("avail-publish", "adaptive").with("notify", "hybrid").with("ring", "PACKED")
                .with("in-order", "on").with("queue-size", "96");
        assertEquals("strong", c.toMap().get("barriers"));
        assertEquals("off", c.toMap().get("cached-avail"));
        assertFalse(c.cachedAvail());
        assertEquals("packed", c.toMap().get("ring"));
        assertEquals("on", c.toMap().get("in-order"));
        assertEquals(RingFormat.PACKED, c.ring());
        assertTrue(c.inOrder());
        assertTrue(c.describe().startsWith("packed ring 96, "), c.describe());
        assertEquals(c, BenchConfig.defaults().with(c.toMap()), "as the device process rebuilds it");
    }
}
