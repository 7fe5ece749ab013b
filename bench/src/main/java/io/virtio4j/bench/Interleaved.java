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

    public static Pairs run(BenchRunner runner, BenchConfig a, BenchConfig b, int warmup, int runs, Consumer<String> progress)
            throws InterruptedException {
        for (int i = 0; i < warmup; i++) {
            progress.accept("warm-up " + (i + 1) + "/" + warmup);
            runner.run(a);
            runner.run(b);
        }
        List<RunResult> ar = new ArrayList<>();
        List<RunResult> br = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            progress.accept("pair " + (i + 1) + "/" + runs + " A");
            ar.add(runner.run(a));
            progress.accept("pair " + (i + 1) + "/" + runs + " B");
            br.add(runner.run(b));
        }
        return new Pairs(a, b, ar, br);
    }
}
