package io.virtio4j.cli;

import io.virtio4j.bench.AdaptivePairs;
import io.virtio4j.bench.ExperimentResult;
import io.virtio4j.bench.ExperimentRunner;
import io.virtio4j.bench.InvalidBenchOptionException;
import io.virtio4j.bench.MachineLoad;
import io.virtio4j.bench.PairedRatio;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;

/** {@code virtio4j experiments}: the interleaved A/B experiments behind the ring lessons. */
@Command(name = "experiments", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Reproduces the experiments behind the ring lessons, each an interleaved A/B on this "
                + "machine, and writes experiments.json, experiments.md and one PNG chart per experiment.",
                "Lessons: cached-avail-idx, lazy-avail-publish, barrier-strength, ring-format, in-order, "
                        + "net-poll-discipline.",
                "Pairs alternate A B, B A. By default the in-process ring rows take turns getting more pairs until "
                        + "each row's 95%% interval is within --half-width of its ratio or the --budget of all rows is "
                        + "spent; --quick and --runs give every row a fixed number of pairs. Verdicts: reproduced, "
                        + "opposite, refuted (the interval holds 1 but excludes the claimed ratio), inconclusive (it holds "
                        + "both).",
                "The vhost-user rows of lazy-avail-publish (lazy-avail-publish-vhost-user*) and of in-order "
                        + "(in-order-vhost-user*) run the front-end library's driver against serve net rxonly in this "
                        + "process, on a schedule and budget of their own (--vhost-seconds, --vhost-budget); lazy "
                        + "publication's set-up against DPDK's net_vhost is peers/bench-publish.sh."},
        footer = {"", "Example: virtio4j experiments --quick --only barrier-strength,ring-format"})
public final class ExperimentsCommand implements Callable<Integer> {

    @Option(names = "--quick", description = "a fixed 6 pairs of short runs per row: all experiments in well under 3 "
            + "minutes (CI, a first look)")
    boolean quick;
    @Option(names = "--only", split = ",", paramLabel = "ID", description = "run only these lessons or rows")
    List<String> only;
    @Option(names = "--out", paramLabel = "DIR", description = "output directory (default ${DEFAULT-VALUE})")
    Path out = Path.of("experiments-out");
    @Option(names = "--runs", description = "exactly this many A/B pairs per row (no adaptive stopping); default: 6 "
            + "with --quick; else the ring rows stop adaptively (--half-width, --budget), the vhost-user rows too "
            + "(--half-width, --vhost-budget), and the tap rows get 16")
    Integer runs;
    @Option(names = "--half-width", paramLabel = "PCT", description = "adaptive stopping: a ring or vhost-user row gets no "
            + "more pairs once its 95%% interval is within this many percent of its ratio (default ${DEFAULT-VALUE})")
    double halfWidth = 3.0;
    @Option(names = "--budget", paramLabel = "S", description = "adaptive stopping: seconds for all ring rows together "
            + "(default ${DEFAULT-VALUE}); each row gets " + FIRST_PAIRS + " pairs first, whatever the budget")
    double budget = 600;
    @Option(names = "--bufs", description = "buffers per run (default 500000 with --quick, else " + DEFAULT_BUFS
            + ": each pair short enough to sit in one cache state)")
    Long bufs;
    @Option(names = "--warmup", description = "unmeasured A/B pairs first (default ${DEFAULT-VALUE})")
    int warmup = 1;
    @Option(names = "--net-seconds", paramLabel = "S", description = "net-poll-discipline: measuring window per run "
            + "(default 0.8 with --quick, else 3); needs root (tap, network namespace)")
    Double netSeconds;
    @Option(names = "--vhost-seconds", paramLabel = "S", description = "vhost-user rows: measuring window per run, after "
            + "0.2 s of sending (default 0.2 with --quick, else 0.5)")
    Double vhostSeconds;
    @Option(names = "--vhost-budget", paramLabel = "S", description = "adaptive stopping of the vhost-user rows: seconds "
            + "for all of them together (default ${DEFAULT-VALUE}); each gets " + FIRST_PAIRS + " pairs first")
    double vhostBudget = 180;

    /** Pairs every ring row gets before adaptive stopping looks at its interval. */
    static final int FIRST_PAIRS = 8;
    static final long DEFAULT_BUFS = 1_000_000;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException, IOException {
        long n = bufs != null ? bufs : quick ? 500_000 : DEFAULT_BUFS;
        if (runs != null && runs < 2) {
            throw new ParameterException(spec.commandLine(), "--runs must be >= 2 for a confidence interval, got " + runs);
        }
        if (!(halfWidth > 0 && halfWidth < 100)) {
            throw new ParameterException(spec.commandLine(), "--half-width must be in (0, 100) percent, got " + halfWidth);
        }
        if (!(budget >= 0 && budget <= 86_400)) {
            throw new ParameterException(spec.commandLine(), "--budget must be in [0, 86400] seconds, got " + budget);
        }
        if (!(vhostBudget >= 0 && vhostBudget <= 86_400)) {
            throw new ParameterException(spec.commandLine(), "--vhost-budget must be in [0, 86400] seconds, got "
                    + vhostBudget);
        }
        double vhostWindow = vhostSeconds != null ? vhostSeconds : quick ? 0.2 : 0.5;
        AdaptivePairs.Stopping ring = runs != null ? AdaptivePairs.Stopping.fixed(runs)
                : quick ? AdaptivePairs.Stopping.fixed(6)
                : AdaptivePairs.Stopping.adaptive(FIRST_PAIRS, halfWidth / 100, (long) (budget * 1e9));
        AdaptivePairs.Stopping vhost = runs != null ? AdaptivePairs.Stopping.fixed(runs)
                : quick ? AdaptivePairs.Stopping.fixed(6)
                : AdaptivePairs.Stopping.adaptive(FIRST_PAIRS, halfWidth / 100, (long) (vhostBudget * 1e9));
        int tapPairs = runs != null ? runs : quick ? 6 : 16;
        Set<String> selection = only == null ? Set.of() : new LinkedHashSet<>(only);
        double netWindow = netSeconds != null ? netSeconds : quick ? 0.8 : 3.0;
        ExperimentRunner runner;
        try {
            runner = new ExperimentRunner(n, ring, tapPairs, warmup, selection, netWindow, vhost, vhostWindow);
            runner.selected();
        } catch (InvalidBenchOptionException e) {
            throw OptionFlags.rejected(spec, e);
        }
        // other processes on the two CPUs move every figure: say how busy the machine was around the run
        double busyBefore = MachineLoad.busyFraction(1000);
        Progress progress = new Progress(System.err);
        long t0 = System.nanoTime();
        List<ExperimentResult> results = runner.run(progress::show);
        long took = System.nanoTime() - t0;
        progress.clear();
        double busyAfter = MachineLoad.busyFraction(1000);
        String how = String.format(Locale.ROOT, "Measured with `virtio4j experiments%s` on %s: in-process ring rows: %s; "
                        + "vhost-user rows: %s; tap rows: %d pairs; runs of %,d buffers, %d warm-up pair(s) per row; pairs "
                        + "alternate A B, B A; driver and device threads pinned to CPUs 0 and 1, cache-line ping-pong probe "
                        + "before and after every run (vhost-user rows: the front-end library's driver sending 64-byte "
                        + "frames into serve net rxonly, buffers/s = frames sent per second of a %.2f s window, every frame "
                        + "counted by the back-end; net-poll-discipline rows: %.1f s windows of a UDP flood through a tap, "
                        + "buffers/s = frames the guest received per second, no pinning); ratio = geometric mean of per-pair B/A, "
                        + "95%% CI = t interval over log ratios, ± = its half-width relative to the ratio, outliers (beyond "
                        + "%.0f MAD) counted and kept; CPU = driver + device thread CPU time; took %.0f s; other load: all CPUs "
                        + "%s busy in the second before the run, %s in the second after (/proc/stat).",
                arguments(),
                java.time.LocalDate.now(), ring.describe(), vhost.describe(), tapPairs, n, warmup, vhostWindow, netWindow,
                PairedRatio.OUTLIER_MADS,
                took / 1e9, busy(busyBefore), busy(busyAfter));
        ExperimentRunner.write(results, out, how);
        java.io.PrintWriter stdout = spec.commandLine().getOut();
        stdout.println(ExperimentRunner.markdown(results, how));
        stdout.println("Written: " + out.resolve("experiments.json") + ", " + out.resolve("experiments.md")
                + " and one PNG per measured experiment in " + out);
        stdout.flush();
        // the rows that finished are written above; a group that failed still fails the command
        java.io.PrintWriter stderr = spec.commandLine().getErr();
        for (Throwable e : runner.failures()) {
            stderr.println("virtio4j experiments: rows not measured, " + e);
            e.printStackTrace(stderr);
        }
        stderr.flush();
        return runner.failures().isEmpty() ? 0 : 1;
    }

    private static String busy(double fraction) {
        return Double.isNaN(fraction) ? "n/a" : String.format(Locale.ROOT, "%.0f%%", 100 * fraction);
    }

    /** The arguments given after the command's name, each with a leading space, for the report. */
    private String arguments() {
        List<String> args = spec.commandLine().getParseResult().originalArgs();
        int from = args.indexOf(spec.name()) + 1;
        StringBuilder sb = new StringBuilder();
        for (String a : args.subList(from, args.size())) {
            sb.append(' ').append(a);
        }
        return sb.toString();
    }
}
