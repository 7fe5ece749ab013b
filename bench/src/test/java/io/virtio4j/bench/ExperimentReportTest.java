package io.virtio4j.bench;

import io.virtio4j.core.stats.QueueCounters;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The report shows each row's half-width, outliers, cache states, CPU and counter figures, from constructed runs. */
class ExperimentReportTest {

    /** A run of 1000 buffers: {@code ns} each, {@code availReads} avail.idx loads, the probe at {@code probe}. */
    private static RunResult run(double ns, long availReads, double probe) {
        QueueCounters device = new QueueCounters();
        device.availIdxReads = availReads;
        return new RunResult(1000, Math.round(1000 * ns), 30_000, 20_000, new QueueCounters(), device, 0, 0, 0, 0,
                "pinned", probe, probe, 0);
    }

    private static Experiment toggleRow() {
        return Experiment.all(1000).stream().filter(e -> e.id().equals("cached-avail-idx-toggle")).findFirst().orElseThrow();
    }

    /** Pairs with B/A = {@code ratios[i]}, A at 100 ns and 2000 avail.idx reads, B at 1000, probes as given. */
    private static Interleaved.Pairs pairs(double[] ratios, double[] probes) {
        List<RunResult> a = new ArrayList<>();
        List<RunResult> b = new ArrayList<>();
        for (int i = 0; i < ratios.length; i++) {
            a.add(run(100, 2000, probes[i]));
            b.add(run(100 * ratios[i], 1000, probes[i]));
        }
        return new Interleaved.Pairs(BenchConfig.defaults(), BenchConfig.defaults(), a, b);
    }

    private static ExperimentResult result(double[] ratios, double[] probes) {
        return ExperimentResult.measured(toggleRow(), new AdaptivePairs.Outcome(pairs(ratios, probes), 42_000_000_000L,
                AdaptivePairs.Stop.BUDGET), null);
    }

    @Test
    void anOutlierIsCountedShownAndKept(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        double[] r = {0.96, 0.97, 0.95, 0.96, 0.97, 0.95, 0.96, 1.40};
        double[] probe = {170, 165, 160, 170, 165, 160, 170, 165};
        ExperimentResult x = result(r, probe);
        assertEquals(List.of(8), x.outlierPairs());
        String md = ExperimentRunner.markdown(List.of(x), "how");
        String row = md.lines().filter(l -> l.startsWith("| cached-avail-idx-toggle ")).findFirst().orElseThrow();
        List<String> cells = List.of(row.split(" \\| "));
        assertEquals("8", cells.get(10), row); // pairs
        assertEquals("1", cells.get(11), row); // outliers
        assertEquals("42", cells.get(12), row); // seconds
        assertEquals(String.format(java.util.Locale.ROOT, "%.1f%%", 100 * x.ratio().halfWidth()), cells.get(8), row);
        assertEquals("avail.idx reads/buffer 2.0000 → 1.0000 (0.500 ±0.0%)", cells.get(14), row);
        assertEquals("50.0 → 50.0 (1.000 ±0.0%)", cells.get(13), row);
        assertTrue(md.contains("Adaptive stopping: 0 of 1 ring rows reached the target half-width, 1 stopped when the "
                + "budget was spent; the ring rows took 42 s."), md);
        assertTrue(md.contains("outlier pairs (beyond 3.0 MAD of log B/A, kept in the interval): #8 1.400 (probe 165 ns)"), md);
        assertTrue(md.contains("8 pairs in 42 s (budget spent)"), md);
        // the interval holds 1 and the claimed 0.963 because of the outlier, which is not dropped
        assertEquals(Verdict.INCONCLUSIVE, x.verdict());
        assertTrue(row.endsWith(String.format(java.util.Locale.ROOT, "inconclusive at ±%.1f%% |",
                100 * x.ratio().halfWidth())), row);

        Map<String, Object> j = x.toJson();
        assertEquals(8, j.get("pairs"));
        assertEquals(x.ratio().halfWidth(), (Double) j.get("half_width"));
        assertEquals(List.of(8), ((Map<?, ?>) j.get("outliers")).get("pairs"));
        List<?> perPair = (List<?>) j.get("per_pair");
        assertEquals(8, perPair.size());
        assertEquals("BA", ((Map<?, ?>) perPair.get(1)).get("order"));
        assertEquals(true, ((Map<?, ?>) perPair.get(7)).get("outlier"));
        assertTrue(x.byState().isEmpty(), "one cache state");
        Chart.write(x, dir.resolve("chart.png"));
        java.awt.image.BufferedImage img = javax.imageio.ImageIO.read(dir.resolve("chart.png").toFile());
        assertEquals(900, img.getWidth());
        // pair 8's number is drawn in the outlier colour (pairs are numbered under the axis, 8 of them here)
        boolean orange = false;
        for (int px = 110; px < 880 && !orange; px++) {
            for (int py = 410; py < 430 && !orange; py++) {
                orange = img.getRGB(px, py) == 0xffff7f0e;
            }
        }
        assertTrue(orange, "the outlier pair is marked");
    }

    /**
     * A group of rows that fails after one of its rows finished (a vhost-user run that was not exact, after the ring
     * rows' budget was spent): the finished row is kept and written, the rest are marked failed naming why, the other
     * groups still run, and the failure is kept for the command to fail on.
     */
    @Test
    void aFailingGroupKeepsTheRowsThatFinishedAndMarksTheRestFailed(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        ExperimentRunner runner = new ExperimentRunner(1000, 2, 0, java.util.Set.of());
        List<Experiment> all = Experiment.all(1000);
        Experiment done = toggleRow();
        Experiment notDone = all.stream().filter(e -> e.id().equals("lazy-avail-publish-vhost-user")).findFirst().orElseThrow();
        Experiment other = all.stream().filter(e -> e.id().equals("in-order")).findFirst().orElseThrow();
        Map<Experiment, ExperimentResult> results = new java.util.HashMap<>();
        List<String> progress = new ArrayList<>();
        BenchmarkFailedException inexact = new BenchmarkFailedException("vhost-user POLL, LAZY: the driver sent 10 frames, "
                + "the back-end received 9 and dropped 0", null);
        runner.runGroup("vhost-user", List.of(done, notDone), results, progress::add, (rows, out, p) -> {
            out.put(done, result(new double[] {0.96, 0.97, 0.95}, new double[] {170, 165, 160}));
            throw inexact;
        });
        runner.runGroup("ring", List.of(other), results, progress::add, (rows, out, p) -> out.put(other, result(
                new double[] {0.96, 0.97}, new double[] {170, 165})));
        // an Error from a group (not one the JVM may not survive) fails that group too, and the next one still runs
        AssertionError broken = new AssertionError("a broken invariant");
        Experiment third = all.stream().filter(e -> e.id().equals("cached-avail-idx")).findFirst().orElseThrow();
        runner.runGroup("tap", List.of(third), results, line -> { }, (rows, out, p) -> {
            throw broken;
        });
        assertThrows(OutOfMemoryError.class, () -> runner.runGroup("tap", List.of(third), results, line -> { },
                (rows, out, p) -> {
                    throw new OutOfMemoryError("not caught: the JVM is not to be trusted after it");
                }));
        assertTrue(results.get(third).failed());
        assertEquals(List.of(inexact, broken), runner.failures());
        assertEquals(3, results.get(done).pairs().size(), "the finished row is kept");
        assertTrue(results.containsKey(other) && !results.get(other).failed(), "the next group still ran");
        ExperimentResult failed = results.get(notDone);
        assertTrue(failed.failed());
        String why = "failed: the vhost-user rows stopped at " + inexact;
        assertEquals(why, failed.notMeasuredBecause());
        assertEquals(List.of(why), progress);
        ExperimentRunner.write(List.of(results.get(done), failed), dir, "how");
        String md = java.nio.file.Files.readString(dir.resolve("experiments.md"));
        assertTrue(md.contains("| lazy-avail-publish-vhost-user | eager | lazy | "), md);
        assertTrue(md.lines().anyMatch(l -> l.startsWith("| lazy-avail-publish-vhost-user ") && l.endsWith("| " + why + " |")), md);
        String json = java.nio.file.Files.readString(dir.resolve("experiments.json"));
        assertTrue(json.contains("\"status\": \"failed\"") && json.contains("the back-end received 9 and dropped 0"), json);
        assertTrue(java.nio.file.Files.size(dir.resolve("cached-avail-idx-toggle.png")) > 0, "the finished row's chart");
    }

    @Test
    void pairsInTwoCacheStatesAreSplitByTheProbe() {
        double[] r = {0.96, 0.97, 0.95, 0.90, 0.91, 0.89};
        double[] probe = {170, 160, 165, 690, 700, 680};
        ExperimentResult x = result(r, probe);
        List<Map<String, Object>> s = x.byState();
        assertEquals(2, s.size());
        assertEquals("near", s.get(0).get("state"));
        assertEquals(3, s.get(0).get("pairs"));
        assertEquals(List.of(160.0, 170.0), s.get(0).get("probe_ns"));
        assertEquals(Math.cbrt(0.96 * 0.97 * 0.95), (Double) s.get(0).get("ratio"), 1e-9);
        assertEquals(List.of(680.0, 700.0), s.get(1).get("probe_ns"));
        assertEquals(Math.cbrt(0.90 * 0.91 * 0.89), (Double) s.get(1).get("ratio"), 1e-9);
        assertEquals(Verdict.REPRODUCED, x.verdict());
        assertTrue(ExperimentRunner.markdown(List.of(x), "how").contains("far state (probe 680-700 ns): 3 pairs, B/A 0.900"));
    }

    @Test
    void theProbeTellsStateChangesAndLevels() {
        assertEquals(Math.sqrt(170 * 680.0), CacheStates.threshold(new double[] {160, 170, 165, 690, 680, 700}), 1e-9);
        assertTrue(Double.isNaN(CacheStates.threshold(new double[] {160, 170, 300})), "within 2x: one state");
        assertTrue(Double.isNaN(CacheStates.threshold(new double[] {Double.NaN, 165})), "no probe, no level");

        List<RunResult> a = List.of(run(100, 0, 165), new RunResult(1000, 100_000, 0, 0, new QueueCounters(),
                new QueueCounters(), 0, 0, 0, 0, "pinned", 165, 680, 0));
        List<RunResult> b = List.of(run(100, 0, 170), run(100, 0, 690));
        Interleaved.Pairs p = new Interleaved.Pairs(null, null, a, b);
        assertFalse(CacheStates.changedState(p, 0));
        assertTrue(CacheStates.changedState(p, 1), "A's probe went from near to far while it ran");
        assertEquals((680 + 690) / 2.0, CacheStates.pairProbe(p, 1), 1e-9);
        assertEquals(167.5, CacheStates.pairProbe(p, 0), 1e-9);
    }
}
