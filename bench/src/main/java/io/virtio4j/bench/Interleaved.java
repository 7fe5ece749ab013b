package io.virtio4j.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Runs two configurations interleaved, A B A B ..., after warming both up, so both see the same machine.
 */
public final class Interleaved {
    private Interleaved() {
    }

    /** Results of an interleaved A/B run, in run order. */
    public record Pairs(BenchConfig a, BenchConfig b, List<RunResult> aRuns, List<RunResult> bRuns) {
        public PairedRatio ratio(Metric m) {
            return PairedRatio.of(m.summarize(aRuns).values(), m.summarize(bRuns).values());
        }
    }

    /** Side A (the old behaviour) or B (the new one) of a comparison. */
    public enum Side { A, B }

    /** Runs one measured run of a side; for comparisons whose sides are not two ring benchmark configurations. */
    @FunctionalInterface
    public interface Sides {
        RunResult run(Side side) throws InterruptedException;
    }

    public static Pairs run(BenchRunner runner, BenchConfig a, BenchConfig b, int warmup, int runs, Consumer<String> progress)
            throws InterruptedException {
        return runSides(side -> runner.run(side == Side.A ? a : b), a, b, warmup, runs, progress);
    }

    /**
     * Runs {@code sides} interleaved; {@code a} and {@code b} only label the result (e.g. the shared base
     * configuration of an experiment that is no ring benchmark).
     */
    public static Pairs runSides(Sides sides, BenchConfig a, BenchConfig b, int warmup, int runs, Consumer<String> progress)
            throws InterruptedException {
        for (int i = 0; i < warmup; i++) {
            progress.accept("warm-up " + (i + 1) + "/" + warmup);
            sides.run(Side.A);
            sides.run(Side.B);
        }
        List<RunResult> ar = new ArrayList<>();
        List<RunResult> br = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            progress.accept("pair " + (i + 1) + "/" + runs + " A");
            ar.add(sides.run(Side.A));
            progress.accept("pair " + (i + 1) + "/" + runs + " B");
            br.add(sides.run(Side.B));
        }
        return new Pairs(a, b, ar, br);
    }
}
