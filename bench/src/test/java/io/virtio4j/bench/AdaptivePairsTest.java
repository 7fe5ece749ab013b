package io.virtio4j.bench;

import io.virtio4j.core.stats.QueueCounters;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pairs alternate their order, and the schedule gives rows pairs until each is narrow enough or the budget is
 * spent: with constructed runs and a clock that advances one second per run, so nothing depends on this machine.
 */
class AdaptivePairsTest {
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    /** A run of 1000 buffers taking {@code nsPerBuffer} each, with the probe reading {@code probe} before and after. */
    static RunResult run(double nsPerBuffer, double probe) {
        return new RunResult(1000, Math.round(1000 * nsPerBuffer), 500_000, 400_000, new QueueCounters(),
                new QueueCounters(), 0, 0, 0, 0, "pinned", probe, probe, 0);
    }

    /** Sides whose B takes {@code ratio.apply(k)} times A's time in its k-th run; each run advances {@code clock} 1 s. */
    private static Interleaved.Sides sides(AtomicLong clock, List<String> order, DoubleUnaryOperator ratio) {
        int[] bRuns = {0};
        return side -> {
            clock.addAndGet(SECOND);
            order.add(side.name());
            return side == Interleaved.Side.A ? run(100, 165) : run(100 * ratio.applyAsDouble(bRuns[0]++), 165);
        };
    }

    private static AdaptivePairs.Row row(Interleaved.Sides s) {
        BenchConfig c = BenchConfig.defaults();
        return new AdaptivePairs.Row(s, c, c, Metric.NS_PER_BUFFER, p -> { });
    }

    @Test
    void pairsAlternateTheirOrderAfterTheWarmUp() throws Exception {
        List<String> order = new ArrayList<>();
        AtomicLong clock = new AtomicLong();
        Interleaved.Pairs p = Interleaved.runSides(sides(clock, order, k -> 1 + k / 100.0), BenchConfig.defaults(),
                BenchConfig.defaults(), 1, 4, s -> { });
        assertEquals(List.of("A", "B", "A", "B", "B", "A", "A", "B", "B", "A"), order);
        // B's k-th run (from 0; the warm-up's is 0) is 1 + k/100 times A: pair i holds its own B whichever ran first
        for (int i = 0; i < 4; i++) {
            assertEquals(1 + (i + 1) / 100.0, p.bRuns().get(i).nanosPerBuffer() / p.aRuns().get(i).nanosPerBuffer(), 1e-9);
            assertEquals(Interleaved.aFirst(i) ? p.aRuns().get(i) : p.bRuns().get(i), p.inRunOrder(i).getFirst());
        }
        Interleaved.Pairs more = Interleaved.more(sides(clock, order, k -> 1), p, 2, s -> { });
        assertEquals(List.of("A", "B", "B", "A"), order.subList(10, 14), "pair 5 runs A first again");
        assertEquals(6, more.size());
    }

    @Test
    void aNarrowRowStopsAfterItsFirstPairsAndANoisyOneRunsUntilTheBudget() throws Exception {
        AtomicLong clock = new AtomicLong();
        List<String> order = new ArrayList<>();
        // steady: B always 0.9 A (half-width 0); noisy: B alternately 0.8 and 1.25 A (never within 3%)
        AdaptivePairs.Row steady = row(sides(clock, order, k -> 0.9));
        AdaptivePairs.Row noisy = row(sides(clock, order, k -> k % 2 == 0 ? 0.8 : 1.25));
        AdaptivePairs.Stopping s = AdaptivePairs.Stopping.adaptive(4, 0.03, 40 * SECOND);
        List<AdaptivePairs.Outcome> o = AdaptivePairs.run(List.of(steady, noisy), s, 1, clock::get);

        assertEquals(AdaptivePairs.Stop.TARGET, o.get(0).stop());
        assertEquals(4, o.get(0).pairs().size());
        assertEquals(10, o.get(0).seconds(), 1e-9, "one warm-up pair and four pairs: ten runs");
        assertEquals(0.9, o.get(0).pairs().ratio(Metric.NS_PER_BUFFER).geoMean(), 1e-9);

        // first blocks take 20 s; turns of 2 pairs (4 s) start while less than 40 s have passed: at 20, 24, ... 36
        assertEquals(AdaptivePairs.Stop.BUDGET, o.get(1).stop());
        assertEquals(4 + 5 * 2, o.get(1).pairs().size());
        assertEquals(10 + 5 * 4, o.get(1).seconds(), 1e-9);
        assertEquals(40 * SECOND, clock.get());
        assertTrue(o.get(1).pairs().ratio(Metric.NS_PER_BUFFER).halfWidth() > 0.03);
    }

    @Test
    void rowsTakeTurnsUntilEachReachesTheTarget() throws Exception {
        AtomicLong clock = new AtomicLong();
        List<String> order = new ArrayList<>();
        // B = 1.1 A, except a first B run at 1.5 A: the spread shrinks as pairs are added, until within 3%
        AdaptivePairs.Row settling = row(sides(clock, order, k -> k == 1 ? 1.5 : 1.1));
        AdaptivePairs.Row steady = row(sides(clock, order, k -> 1.0));
        AdaptivePairs.Stopping s = AdaptivePairs.Stopping.adaptive(4, 0.03, 1000 * SECOND);
        List<AdaptivePairs.Outcome> o = AdaptivePairs.run(List.of(settling, steady), s, 1, clock::get);

        assertEquals(AdaptivePairs.Stop.TARGET, o.get(0).stop());
        assertEquals(AdaptivePairs.Stop.TARGET, o.get(1).stop());
        assertEquals(4, o.get(1).pairs().size());
        int n = o.get(0).pairs().size();
        assertTrue(n > 4 && n % 2 == 0, "whole A B, B A blocks: " + n);
        assertTrue(o.get(0).pairs().ratio(Metric.NS_PER_BUFFER).halfWidth() <= 0.03);
        Interleaved.Pairs shorter = new Interleaved.Pairs(null, null, o.get(0).pairs().aRuns().subList(0, n - 2),
                o.get(0).pairs().bRuns().subList(0, n - 2));
        assertTrue(shorter.ratio(Metric.NS_PER_BUFFER).halfWidth() > 0.03, "it stopped at the first block within 3%");
        assertEquals(1.1, o.get(0).pairs().ratio(Metric.NS_PER_BUFFER).median(), 1e-9, "the outlier is kept");
        assertEquals(2L * (1 + n) + 2L * (1 + 4), clock.get() / SECOND);
    }

    /** Sides that throw {@code failure} at their {@code n}-th run (from 0), else as {@code ok}. */
    private static Interleaved.Sides failingAt(int n, RuntimeException failure, Interleaved.Sides ok) {
        int[] runs = {0};
        return side -> {
            if (runs[0]++ == n) {
                throw failure;
            }
            return ok.run(side);
        };
    }

    @Test
    void aRowWhoseRunThrowsLeavesTheScheduleAndTheOthersGoOn() throws Exception {
        AtomicLong clock = new AtomicLong();
        List<String> order = new ArrayList<>();
        BenchmarkFailedException inexact = new BenchmarkFailedException("not exact", null);
        BenchmarkFailedException stalled = new BenchmarkFailedException("stalled", null);
        List<String> lines = new ArrayList<>();
        BenchConfig c = BenchConfig.defaults();
        // in its first block (no warm-up: run 3 is the second pair's), and in its first turn (8 runs of first block)
        AdaptivePairs.Row early = new AdaptivePairs.Row(failingAt(3, inexact, sides(clock, order, k -> 1.1)), c, c,
                Metric.NS_PER_BUFFER, lines::add);
        AdaptivePairs.Row inATurn = row(failingAt(9, stalled, sides(clock, order, k -> k % 2 == 0 ? 0.8 : 1.25)));
        AdaptivePairs.Row steady = row(sides(clock, order, k -> 0.9));
        List<AdaptivePairs.Outcome> o = AdaptivePairs.run(List.of(early, inATurn, steady),
                AdaptivePairs.Stopping.adaptive(4, 0.03, 1000 * SECOND), 0, clock::get);
        assertEquals(AdaptivePairs.Stop.FAILED, o.get(0).stop());
        assertEquals(inexact, o.get(0).failure());
        assertEquals("failed, leaves the schedule: " + inexact, lines.getLast(), "said where its progress goes");
        assertEquals(AdaptivePairs.Stop.FAILED, o.get(1).stop());
        assertEquals(stalled, o.get(1).failure());
        assertEquals(AdaptivePairs.Stop.TARGET, o.get(2).stop(), "the steady row still got its pairs");
        assertEquals(4, o.get(2).pairs().size());
        assertEquals(null, o.get(2).failure());
    }

    @Test
    void aFixedScheduleGivesEveryRowExactlyItsPairs() throws Exception {
        AtomicLong clock = new AtomicLong();
        List<String> order = new ArrayList<>();
        List<AdaptivePairs.Outcome> o = AdaptivePairs.run(List.of(row(sides(clock, order, k -> k % 2 == 0 ? 0.8 : 1.25)),
                row(sides(clock, order, k -> 1))), AdaptivePairs.Stopping.fixed(6), 0, clock::get);
        for (AdaptivePairs.Outcome x : o) {
            assertEquals(6, x.pairs().size());
            assertEquals(AdaptivePairs.Stop.FIXED, x.stop());
            assertEquals(12, x.seconds(), 1e-9);
        }
        assertFalse(AdaptivePairs.Stopping.fixed(6).isAdaptive());
    }

    @Test
    void aRowWhoseFigureIsZeroStopsForWantOfAnInterval() throws Exception {
        AtomicLong clock = new AtomicLong();
        BenchConfig c = BenchConfig.defaults();
        // no kicks at all on either side: kicks/buffer is 0, its ratio is undefined
        AdaptivePairs.Row r = new AdaptivePairs.Row(sides(clock, new ArrayList<>(), k -> 1), c, c,
                Metric.KICKS_PER_BUFFER, p -> { });
        AdaptivePairs.Outcome o = AdaptivePairs.run(List.of(r), AdaptivePairs.Stopping.adaptive(2, 0.03, 100 * SECOND),
                0, clock::get).getFirst();
        assertEquals(AdaptivePairs.Stop.NO_INTERVAL, o.stop());
        assertEquals(2, o.pairs().size());
    }

    /**
     * Stopping on the interval's width keeps its coverage near 95%: simulated pairs whose log B/A is normal around 0
     * with a spread of 8% (about 30 pairs to reach 3%), 1000 experiments with a fixed seed. Stopping as soon as the
     * spread happens to look small costs a little (about 93% here, as a simulation outside this code also found);
     * stopping on "the interval excludes 1" would collapse it far below.
     */
    @Test
    void adaptiveIntervalsStillHoldTheTrueRatioAboutNinetyFivePercentOfTheTime() throws Exception {
        java.util.Random rnd = new java.util.Random(14);
        int trials = 1000;
        int covered = 0;
        long pairs = 0;
        for (int t = 0; t < trials; t++) {
            AtomicLong clock = new AtomicLong();
            Interleaved.Sides s = side -> {
                clock.addAndGet(SECOND);
                return side == Interleaved.Side.A ? run(100, 165) : run(100 * Math.exp(0.08 * rnd.nextGaussian()), 165);
            };
            AdaptivePairs.Outcome o = AdaptivePairs.run(List.of(row(s)),
                    AdaptivePairs.Stopping.adaptive(8, 0.03, 10_000 * SECOND), 0, clock::get).getFirst();
            assertEquals(AdaptivePairs.Stop.TARGET, o.stop());
            covered += o.pairs().ratio(Metric.NS_PER_BUFFER).contains(1.0) ? 1 : 0;
            pairs += o.pairs().size();
        }
        double coverage = (double) covered / trials;
        assertTrue(coverage >= 0.91 && coverage <= 0.97, "coverage " + coverage);
        double meanPairs = (double) pairs / trials;
        assertTrue(meanPairs > 20 && meanPairs < 45, "pairs " + meanPairs);
    }

    @Test
    void aScheduleOutOfRangeIsRejectedByItsOption() {
        InvalidBenchOptionException e = org.junit.jupiter.api.Assertions.assertThrows(InvalidBenchOptionException.class,
                () -> AdaptivePairs.Stopping.fixed(1));
        assertEquals(List.of("runs"), e.options());
        e = org.junit.jupiter.api.Assertions.assertThrows(InvalidBenchOptionException.class,
                () -> AdaptivePairs.Stopping.adaptive(4, 0, SECOND));
        assertEquals(List.of("halfWidth"), e.options());
    }
}
