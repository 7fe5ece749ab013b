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

    @Test
    void verdictFollowsTheIntervalAndTheClaimsDirection() {
        PairedRatio up = PairedRatio.of(new double[] {1, 1, 1}, new double[] {1.5, 1.6, 1.55});
        PairedRatio flat = PairedRatio.of(new double[] {1, 1, 1}, new double[] {0.9, 1.1, 1.0});
        assertEquals(Verdict.REPRODUCED, Verdict.of(up, true));
        assertEquals(Verdict.OPPOSITE, Verdict.of(up, false));
        assertEquals(Verdict.NOT_REPRODUCED, Verdict.of(flat, true));
        assertEquals(Verdict.NOT_MEASURED, Verdict.of(PairedRatio.of(new double[] {1}, new double[] {2}), true));
    }

    @Test
    void tQuantilesMatchTheTable() {
        assertEquals(12.706, PairedRatio.t975(1));
        assertEquals(2.262, PairedRatio.t975(9));
        assertEquals(2.042, PairedRatio.t975(30));
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
