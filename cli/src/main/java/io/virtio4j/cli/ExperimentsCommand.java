package io.virtio4j.cli;

import io.virtio4j.bench.ExperimentResult;
import io.virtio4j.bench.ExperimentRunner;
import io.virtio4j.bench.InvalidBenchOptionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
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
                        + "net-poll-discipline."},
        footer = {"", "Example: virtio4j experiments --quick --only barrier-strength,ring-format"})
public final class ExperimentsCommand implements Callable<Integer> {

    @Option(names = "--quick", description = "fewer, shorter runs: all experiments in well under 3 minutes")
    boolean quick;
    @Option(names = "--only", split = ",", paramLabel = "ID", description = "run only these lessons or rows")
    List<String> only;
    @Option(names = "--out", paramLabel = "DIR", description = "output directory (default ${DEFAULT-VALUE})")
    Path out = Path.of("experiments-out");
    @Option(names = "--runs", description = "A/B pairs per experiment (default 5 with --quick, else 15)")
    Integer runs;
    @Option(names = "--bufs", description = "buffers per run (default 500000 with --quick, else 3000000)")
    Long bufs;
    @Option(names = "--warmup", description = "unmeasured A/B pairs first (default ${DEFAULT-VALUE})")
    int warmup = 1;
    @Option(names = "--net-seconds", paramLabel = "S", description = "net-poll-discipline: measuring window per run "
            + "(default 0.8 with --quick, else 3); needs root (tap, network namespace)")
    Double netSeconds;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException, IOException {
        int pairs = runs != null ? runs : quick ? 5 : 15;
        long n = bufs != null ? bufs : quick ? 500_000 : 3_000_000;
        if (pairs < 2) {
            throw new IllegalArgumentException("--runs must be >= 2 for a confidence interval");
        }
        Set<String> selection = only == null ? Set.of() : new LinkedHashSet<>(only);
        double netWindow = netSeconds != null ? netSeconds : quick ? 0.8 : 3.0;
        ExperimentRunner runner = new ExperimentRunner(n, pairs, warmup, selection, netWindow);
        try {
            runner.selected();
        } catch (InvalidBenchOptionException e) {
            throw OptionFlags.rejected(spec, e);
        }
        Progress progress = new Progress(System.err);
        long t0 = System.nanoTime();
        List<ExperimentResult> results = runner.run(progress::show);
        progress.clear();
        String how = String.format(Locale.ROOT, "Measured with `virtio4j experiments%s` on %s: %d interleaved A/B pairs "
                        + "(A B A B ...) of %,d buffers each after %d warm-up pair(s); driver and device threads pinned "
                        + "to CPUs 0 and 1 (net-poll-discipline rows: %.1f s windows of a UDP flood through a tap, "
                        + "buffers/s = frames the guest received per second, no pinning); ratio = geometric mean of "
                        + "per-pair B/A, 95%% CI = t interval over log ratios; took %.0f s.",
                quick ? " --quick" : "", java.time.LocalDate.now(), pairs, n, warmup, netWindow,
                (System.nanoTime() - t0) / 1e9);
        ExperimentRunner.write(results, out, how);
        System.out.println(ExperimentRunner.markdown(results, how));
        System.out.println("Written: " + out.resolve("experiments.json") + ", " + out.resolve("experiments.md")
                + " and one PNG per measured experiment in " + out);
        return 0;
    }
}
