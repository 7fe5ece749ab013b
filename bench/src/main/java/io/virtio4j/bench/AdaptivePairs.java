package io.virtio4j.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Gives several A/B comparisons their interleaved pairs: each a first block, then, taking turns, more pairs to
 * every comparison whose interval is still wider than the target, until each is narrow enough or the time
 * budget of all of them together is spent. Turns spread each comparison's pairs over the whole budget, so no
 * comparison sits entirely in one of the machine's cache states while another sits in the other.
 *
 * <p>The rule stops on the interval's width, never on where it lies: for roughly normal log ratios the spread
 * estimate is independent of the mean, so stopping once the interval is narrow does not pick the moments when
 * the ratio happens to look like the claim (stopping on "significant" would), and the 95% stays close to 95%:
 * simulated with normal log ratios, 92.5-95% for per-pair spreads of 2-15% (the dip where stopping early on a
 * spread that looks small by chance is most likely, around 30 pairs; see AdaptivePairsTest).
 */
public final class AdaptivePairs {
    private AdaptivePairs() {
    }

    /**
     * How many pairs each comparison gets.
     *
     * @param firstPairs      pairs every comparison gets first, whatever the budget (at least 2, for an interval)
     * @param step            pairs added to a comparison per turn (even: a whole A B, B A block)
     * @param targetHalfWidth a comparison gets no more pairs once its interval's relative half-width
     *                        ({@link PairedRatio#halfWidth()}) is at most this; infinite for a fixed number of pairs
     * @param budgetNanos     no turn starts once this much time has passed since the first comparison began
     */
    public record Stopping(int firstPairs, int step, double targetHalfWidth, long budgetNanos) {
        public Stopping {
            if (firstPairs < 2) {
                throw new InvalidBenchOptionException("%s must be >= 2 for an interval, got " + firstPairs, "runs");
            }
            if (step < 2 || step % 2 != 0) {
                throw new IllegalArgumentException("step must be even and >= 2 (whole A B, B A blocks), got " + step);
            }
            if (!(targetHalfWidth > 0)) {
                throw new InvalidBenchOptionException("%s must be > 0, got " + targetHalfWidth, "halfWidth");
            }
            if (budgetNanos < 0) {
                throw new InvalidBenchOptionException("%s must be >= 0, got " + budgetNanos + " ns", "budget");
            }
        }

        /** Exactly {@code pairs} pairs each. */
        public static Stopping fixed(int pairs) {
            return new Stopping(pairs, 2, Double.POSITIVE_INFINITY, 0);
        }

        /** At least {@code firstPairs}, then blocks of 2 until the half-width is at most {@code target} or the budget is spent. */
        public static Stopping adaptive(int firstPairs, double target, long budgetNanos) {
            return new Stopping(firstPairs, 2, target, budgetNanos);
        }

        public boolean isAdaptive() {
            return targetHalfWidth != Double.POSITIVE_INFINITY;
        }

        public String describe() {
            return isAdaptive()
                    ? String.format(Locale.ROOT, "at least %d pairs each, then %d more at a time to every row whose 95%% "
                            + "half-width is above %.1f%%, until the %.0f s budget of all rows is spent", firstPairs, step,
                            100 * targetHalfWidth, budgetNanos / 1e9)
                    : firstPairs + " pairs each";
        }
    }

    /** Why a comparison got no more pairs. */
    public enum Stop {
        /** A fixed number of pairs was asked for. */
        FIXED("fixed"),
        /** Its half-width reached the target. */
        TARGET("target reached"),
        /** The budget was spent first. */
        BUDGET("budget spent"),
        /** Its figure is zero or negative in some run (e.g. no kicks at all): a ratio of it has no interval. */
        NO_INTERVAL("no interval"),
        /** One of its runs threw (a run that was not exact, a stall): it left the schedule, the others went on. */
        FAILED("failed");

        private final String text;

        Stop(String text) {
            this.text = text;
        }

        public String text() {
            return text;
        }
    }

    /**
     * One comparison.
     *
     * @param metric   the figure whose interval decides when it has enough pairs
     * @param progress where its progress lines go
     */
    public record Row(Interleaved.Sides sides, BenchConfig a, BenchConfig b, Metric metric, Consumer<String> progress) {
    }

    /**
     * What one comparison got.
     *
     * @param nanos   time its warm-up and measured pairs took (its share of the budget)
     * @param failure what a run of it threw (then {@code stop} is FAILED and {@code pairs} unusable), else null
     */
    public record Outcome(Interleaved.Pairs pairs, long nanos, Stop stop, RuntimeException failure) {
        public Outcome(Interleaved.Pairs pairs, long nanos, Stop stop) {
            this(pairs, nanos, stop, null);
        }

        public double seconds() {
            return nanos / 1e9;
        }
    }

    /**
     * Runs the rows' warm-up pairs and first blocks one row after the other, then the turns. A row one of whose runs
     * throws a RuntimeException (what a failed or stalled run throws) leaves the schedule with it as its failure and
     * the others go on; an Error or an interrupt ends the whole schedule.
     *
     * @param clock nanosecond clock (System::nanoTime; a test passes its own)
     */
    public static List<Outcome> run(List<Row> rows, Stopping s, int warmup, LongSupplier clock)
            throws InterruptedException {
        long start = clock.getAsLong();
        int n = rows.size();
        Interleaved.Pairs[] pairs = new Interleaved.Pairs[n];
        long[] spent = new long[n];
        Stop[] stop = new Stop[n];
        RuntimeException[] failure = new RuntimeException[n];
        for (int i = 0; i < n; i++) {
            Row r = rows.get(i);
            long t0 = clock.getAsLong();
            try {
                Interleaved.warmUp(r.sides(), warmup, r.progress());
                pairs[i] = Interleaved.more(r.sides(), new Interleaved.Pairs(r.a(), r.b(), List.of(), List.of()),
                        s.firstPairs(), r.progress());
                stop[i] = s.isAdaptive() ? reached(pairs[i], r.metric(), s) : Stop.FIXED;
            } catch (RuntimeException e) {
                stop[i] = fail(r, failure, i, e);
            }
            spent[i] += clock.getAsLong() - t0;
        }
        boolean turnTaken = true;
        while (turnTaken) {
            turnTaken = false;
            for (int i = 0; i < n; i++) {
                if (stop[i] != null) {
                    continue;
                }
                if (clock.getAsLong() - start >= s.budgetNanos()) {
                    stop[i] = Stop.BUDGET;
                    continue;
                }
                Row r = rows.get(i);
                long t0 = clock.getAsLong();
                try {
                    pairs[i] = Interleaved.more(r.sides(), pairs[i], s.step(), r.progress());
                    stop[i] = reached(pairs[i], r.metric(), s);
                } catch (RuntimeException e) {
                    stop[i] = fail(r, failure, i, e);
                }
                spent[i] += clock.getAsLong() - t0;
                turnTaken = true;
            }
        }
        List<Outcome> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(new Outcome(pairs[i], spent[i], stop[i], failure[i]));
        }
        return out;
    }

    private static Stop fail(Row r, RuntimeException[] failure, int i, RuntimeException e) {
        failure[i] = e;
        r.progress().accept("failed, leaves the schedule: " + e);
        return Stop.FAILED;
    }

    /** TARGET or NO_INTERVAL when the row needs no more pairs, null while it does. */
    private static Stop reached(Interleaved.Pairs p, Metric m, Stopping s) {
        PairedRatio r = p.ratio(m);
        if (!r.hasInterval()) {
            return Stop.NO_INTERVAL;
        }
        return r.halfWidth() <= s.targetHalfWidth() ? Stop.TARGET : null;
    }
}
