package io.virtio4j.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Runs two configurations interleaved in pairs, after warming both up, so both see the same machine. The pairs
 * alternate their order, A B, B A, A B, ...: a drift of the machine within a pair, or an advantage of running
 * second (caches, JIT state left by the first run), then favours A in one pair and B in the next, and cancels
 * over every two pairs instead of biasing every ratio the same way.
 */
public final class Interleaved {
    private Interleaved() {
    }

    /**
     * Results of an interleaved A/B run: pair {@code i} is {@code aRuns[i]} and {@code bRuns[i]}, run in the
     * order {@link #aFirst(int)} gives.
     */
    public record Pairs(BenchConfig a, BenchConfig b, List<RunResult> aRuns, List<RunResult> bRuns) {
        public PairedRatio ratio(Metric m) {
            return PairedRatio.of(m.summarize(aRuns).values(), m.summarize(bRuns).values());
        }

        public int size() {
            return aRuns.size();
        }

        /** Pair {@code i}'s runs in the order they ran. */
        public List<RunResult> inRunOrder(int i) {
            return aFirst(i) ? List.of(aRuns.get(i), bRuns.get(i)) : List.of(bRuns.get(i), aRuns.get(i));
        }
    }

    /** Whether pair {@code i} (from 0) runs A first: even pairs run A B, odd pairs B A. */
    public static boolean aFirst(int i) {
        return i % 2 == 0;
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
        return runSides(sides(runner, a, b), a, b, warmup, runs, progress);
    }

    /** The two sides of a ring benchmark comparison. */
    public static Sides sides(BenchRunner runner, BenchConfig a, BenchConfig b) {
        return side -> runner.run(side == Side.A ? a : b);
    }

    /**
     * Runs {@code sides} interleaved; {@code a} and {@code b} only label the result (e.g. the shared base
     * configuration of an experiment that is no ring benchmark).
     */
    public static Pairs runSides(Sides sides, BenchConfig a, BenchConfig b, int warmup, int runs, Consumer<String> progress)
            throws InterruptedException {
        warmUp(sides, warmup, progress);
        return more(sides, new Pairs(a, b, List.of(), List.of()), runs, progress);
    }

    /** Unmeasured pairs, so both sides' code is compiled before the first measured pair. */
    public static void warmUp(Sides sides, int pairs, Consumer<String> progress) throws InterruptedException {
        for (int i = 0; i < pairs; i++) {
            progress.accept("warm-up " + (i + 1) + "/" + pairs);
            sides.run(Side.A);
            sides.run(Side.B);
        }
    }

    /** {@code p} with {@code n} more measured pairs, their order continuing the alternation of {@code p}'s. */
    public static Pairs more(Sides sides, Pairs p, int n, Consumer<String> progress) throws InterruptedException {
        List<RunResult> ar = new ArrayList<>(p.aRuns());
        List<RunResult> br = new ArrayList<>(p.bRuns());
        for (int k = 0; k < n; k++) {
            int i = ar.size();
            String pair = "pair " + (i + 1) + " (" + (k + 1) + "/" + n + ") ";
            if (aFirst(i)) {
                progress.accept(pair + "A");
                RunResult ra = sides.run(Side.A);
                progress.accept(pair + "B");
                br.add(sides.run(Side.B));
                ar.add(ra);
            } else {
                progress.accept(pair + "B");
                RunResult rb = sides.run(Side.B);
                progress.accept(pair + "A");
                ar.add(sides.run(Side.A));
                br.add(rb);
            }
        }
        return new Pairs(p.a(), p.b(), List.copyOf(ar), List.copyOf(br));
    }
}
