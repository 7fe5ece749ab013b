package io.virtio4j.cli;

import io.virtio4j.bench.BenchConfig;
import io.virtio4j.bench.BenchReport;
import io.virtio4j.bench.Interleaved;
import io.virtio4j.bench.Json;
import io.virtio4j.bench.BenchRunner;
import io.virtio4j.bench.InvalidBenchOptionException;
import io.virtio4j.bench.TwoProcessBenchmark;
import io.virtio4j.bench.RunResult;
import io.virtio4j.bench.Reclaim;
import io.virtio4j.bench.TrafficPattern;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.ordering.Ordering;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code virtio4j bench}: a driver thread and a device thread hammer one ring, split or packed. */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Driver and device threads, each pinned to a CPU, move buffers through one ring (split or packed) in one "
                + "shared segment, in the manner of Linux tools/virtio virtio_test and ringtest.",
                "Prints each figure as perf stat -r N does: mean, relative spread, median."},
        footer = {"", "Example: virtio4j bench --ring packed --queue-size 128 --notify hybrid"})
public final class BenchCommand implements Callable<Integer> {
    private static final BenchConfig D = BenchConfig.defaults();

    @Option(names = "--bufs", description = "buffers per run (default ${DEFAULT-VALUE})")
    long bufs = D.bufs();
    @Option(names = "--queue-size", description = "entries per ring: a power of two for split rings, 1 to 32768 for packed (default ${DEFAULT-VALUE})")
    int ringSize = D.ringSize();
    @Option(names = "--ring", paramLabel = "split|packed", description = "ring format, both sides (default split)",
            converter = Converters.RingFormatConverter.class)
    RingFormat ring = D.ring();
    @Option(names = "--pattern", paramLabel = "stream|rr", description = "stream: keep the ring full; rr: "
            + "request-response, one buffer in flight, the device echoes each request, the driver checks each answer "
            + "and reports round-trip p50/p99 (default stream)", converter = Converters.PatternConverter.class)
    TrafficPattern pattern = D.pattern();
    @Option(names = "--batch", description = "buffers added per kick / pushed per used publication (default "
            + "${DEFAULT-VALUE}, with --pattern rr 1)")
    Integer batch;
    @Option(names = "--buf-size", description = "bytes per buffer element (default ${DEFAULT-VALUE})")
    int bufSize = D.bufSize();
    @Option(names = "--chain", description = "elements per buffer: 1 = one readable; n>1 = n-1 readable + 1 writable "
            + "(default 1, with --pattern rr 2)")
    Integer chain;
    @Option(names = "--indirect", arity = "1", paramLabel = "on|off", description = "negotiate VIRTIO_F_INDIRECT_DESC: "
            + "put chains in indirect tables (needs --chain >= 2) (default off)", converter = Converters.OnOffConverter.class)
    boolean indirect = D.indirect();
    @Option(names = "--event-idx", arity = "1", paramLabel = "on|off", description = "negotiate VIRTIO_F_EVENT_IDX; off: "
            + "suppress with the flags (default on)", converter = Converters.OnOffConverter.class)
    boolean eventIdx = D.eventIdx();
    @Option(names = "--in-order", arity = "1", paramLabel = "on|off", description = "negotiate VIRTIO_F_IN_ORDER on both "
            + "sides (default off)", converter = Converters.OnOffConverter.class)
    boolean inOrder = D.inOrder();
    @Option(names = "--inflight", arity = "1", paramLabel = "on|off", description = "the device queue records every "
            + "buffer it holds in an inflight region, as a vhost-user back-end with INFLIGHT_SHMFD does (default off)",
            converter = Converters.OnOffConverter.class)
    boolean inflight = D.inflight();
    @Option(names = "--dirty-log", arity = "1", paramLabel = "on|off", description = "the device queue marks its used-ring "
            + "writes, and the device the data it writes (--verify), in a dirty-page bitmap sized for the run's memory, "
            + "as a vhost-user back-end does during a live migration; the report counts the pages marked (default off)",
            converter = Converters.OnOffConverter.class)
    boolean dirtyLog = D.dirtyLog();
    @Option(names = "--flight-recording", arity = "1", paramLabel = "on|off", description = "each run under a JFR "
            + "recording (of --flight-recording-settings), started before it and closed after it; --compare "
            + "flight-recording=off,on measures what a recording running costs, in one JVM (--processes 1 only) "
            + "(default off)", converter = Converters.OnOffConverter.class)
    boolean flightRecording = D.flightRecording();
    @Option(names = "--flight-recording-settings", paramLabel = "default|profile|FILE.jfc", description = "the "
            + "recording's settings with --flight-recording on: one of the JDK's (default, as -XX:StartFlightRecording "
            + "uses; profile) or a .jfc file, e.g. share/virtio4j/jfr/virtio4j.jfc, virtio4j's events only "
            + "(default ${DEFAULT-VALUE})")
    String flightRecordingSettings = D.flightRecordingSettings();
    @Option(names = "--delayed-interrupt", description = "driver asks for a notification after ~3/4 of outstanding buffers")
    boolean delayedInterrupt = D.delayedInterrupt();
    @Option(names = "--barriers", description = "weak | strong (default ${DEFAULT-VALUE})", converter = Converters.OrderingConverter.class)
    Ordering barriers = D.barriers();
    @Option(names = "--avail-publish", description = "eager | lazy | adaptive (default ${DEFAULT-VALUE})", converter = Converters.PublicationConverter.class)
    AvailPublication availPublish = D.availPublish();
    @Option(names = "--reclaim", paramLabel = "eager|lazy", description = "when the driver takes used buffers back "
            + "(stream pattern): eager after every round of adds (virtio_test, ringtest); lazy only after a round that "
            + "could not add a whole batch, as DPDK's tx_free_thresh (default lazy)",
            converter = Converters.ReclaimConverter.class)
    Reclaim reclaim = D.reclaim();
    @Option(names = "--cached-avail", arity = "1", paramLabel = "on|off", description = "on | off: device caches avail.idx read while re-enabling kicks (default on)", converter = Converters.OnOffConverter.class)
    boolean cachedAvail = D.cachedAvail();
    @Option(names = "--notify", paramLabel = "MODE", description = "poll | notify | hybrid: how both threads wait (default poll)", converter = Converters.ModeConverter.class)
    NotificationMode mode = D.mode();
    @Option(names = "--toggle-notify", description = "device disables and re-enables kicks around every pop")
    boolean toggleNotify = D.toggleNotify();
    @Option(names = "--hybrid-spin-ns", description = "hybrid mode: spin this long before sleeping (default ${DEFAULT-VALUE})")
    long hybridSpinNanos = D.hybridSpinNanos();
    @Option(names = "--verify", description = "driver writes a sequence number, device echoes it + 1, driver checks")
    boolean verify = D.verify();
    @Option(names = "--driver-cpu", description = "CPU for the driver thread, -1 = do not pin (default ${DEFAULT-VALUE})")
    int driverCpu = D.driverCpu();
    @Option(names = "--device-cpu", description = "CPU for the device thread, -1 = do not pin (default ${DEFAULT-VALUE})")
    int deviceCpu = D.deviceCpu();
    @Option(names = "--runs", description = "measured runs (default ${DEFAULT-VALUE})")
    int runs = 5;
    @Option(names = "--warmup", description = "unmeasured runs first (default ${DEFAULT-VALUE})")
    int warmup = 1;
    @Option(names = "--processes", description = "1: driver and device threads in this JVM; 2: the device in a second "
            + "JVM, sharing a memfd and eventfds (default ${DEFAULT-VALUE})")
    int processes = 1;
    @Option(names = "--json", paramLabel = "FILE", description = "also write the results as JSON to FILE")
    Path json;
    @Option(names = "--compare", paramLabel = "KEY=A,B",
            description = "run option KEY at value A and at value B interleaved (A B A B ...) and print B/A with a 95%% "
                    + "confidence interval, e.g. --compare barriers=weak,strong, --compare cached-avail=off,on or "
                    + "--compare ring=split,packed, --compare reclaim=eager,lazy, --compare inflight=off,on, --compare dirty-log=off,on or --compare flight-recording=off,on")
    String compare;

    @Spec
    CommandSpec spec;

    /** The configuration the flags give; a value out of range is reported by its flag. */
    BenchConfig config() {
        try {
            // a request-response run's own shape unless the flags say otherwise: one buffer in flight, a request and
            // its answer
            BenchConfig shape = pattern == TrafficPattern.RR ? D.requestResponse() : D;
            return new BenchConfig(bufs, ringSize, ring, batch != null ? batch : shape.batch(), bufSize,
                    chain != null ? chain : shape.chain(), indirect, eventIdx, inOrder,
                    delayedInterrupt, barriers, availPublish, reclaim, cachedAvail, mode, toggleNotify, hybridSpinNanos, verify,
                    driverCpu, deviceCpu, inflight, dirtyLog, pattern, flightRecording,
                    flightRecordingSettings);
        } catch (InvalidBenchOptionException e) {
            throw OptionFlags.rejected(spec, e);
        }
    }

    @Override
    public Integer call() throws InterruptedException, IOException {
        if (runs < 1) {
            throw new ParameterException(spec.commandLine(), "--runs must be >= 1, got " + runs);
        }
        if (warmup < 0) {
            throw new ParameterException(spec.commandLine(), "--warmup must be >= 0, got " + warmup);
        }
        if (processes != 1 && processes != 2) {
            throw new ParameterException(spec.commandLine(), "--processes must be 1 or 2, got " + processes);
        }
        BenchConfig cfg = config();
        if (processes == 1) {
            return measure(cfg, BenchRunner.IN_PROCESS);
        }
        try {
            // every configuration the command will run, refused before the device's JVM starts
            TwoProcessBenchmark.check(cfg);
            if (compare != null) {
                Comparison c = comparison(cfg);
                TwoProcessBenchmark.check(c.a());
                TwoProcessBenchmark.check(c.b());
            }
        } catch (InvalidBenchOptionException e) {
            throw OptionFlags.rejected(spec, e); // by the flags (--flight-recording, --processes)
        }
        try (TwoProcessBenchmark two = TwoProcessBenchmark.start()) {
            return measure(cfg, two::run);
        }
    }

    private int measure(BenchConfig cfg, BenchRunner runner) throws InterruptedException, IOException {
        Progress progress = new Progress(System.err);
        String where = processes == 2 ? " [driver and device in two processes]" : "";
        if (compare != null) {
            return compare(cfg, runner, progress, where);
        }
        System.out.println("virtio4j bench: " + cfg.describe() + where);
        for (int i = 0; i < warmup; i++) {
            progress.show(String.format(Locale.ROOT, "warm-up %d/%d", i + 1, warmup));
            runner.run(cfg);
        }
        List<RunResult> results = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            progress.show(String.format(Locale.ROOT, "run %d/%d%s", i + 1, runs, results.isEmpty() ? ""
                    : String.format(Locale.ROOT, " (last %,.0f buffers/s)", results.getLast().buffersPerSecond())));
            results.add(runner.run(cfg));
        }
        progress.clear();
        BenchReport.print(System.out, cfg, results);
        if (json != null) {
            Map<String, Object> j = BenchReport.toJson(cfg, results);
            j.put("processes", processes);
            Files.writeString(json, Json.write(j));
            System.out.println("  JSON written to " + json);
        }
        return 0;
    }

    /** The two sides {@code --compare KEY=A,B} asks for: {@code cfg} with option KEY at A, and at B. */
    record Comparison(String key, BenchConfig a, BenchConfig b) {
    }

    /** Parses {@code --compare} against {@code cfg}; a value out of range is reported by its flag. */
    Comparison comparison(BenchConfig cfg) {
        int eq = compare.indexOf('=');
        String[] values = eq < 0 ? new String[0] : compare.substring(eq + 1).split(",");
        if (eq < 1 || values.length != 2) {
            throw new IllegalArgumentException("--compare takes KEY=A,B, got '" + compare + "'");
        }
        String key = compare.substring(0, eq).trim();
        try {
            return new Comparison(key, cfg.with(key, values[0]), cfg.with(key, values[1]));
        } catch (InvalidBenchOptionException e) {
            throw OptionFlags.rejected(spec, e);
        }
    }

    private int compare(BenchConfig cfg, BenchRunner runner, Progress progress, String where)
            throws InterruptedException, IOException {
        Comparison c = comparison(cfg);
        System.out.println("virtio4j bench --compare " + compare + ": " + cfg.describe() + where);
        Interleaved.Pairs pairs = Interleaved.run(runner, c.a(), c.b(), warmup, runs, progress::show);
        progress.clear();
        BenchReport.printComparison(System.out, c.key(), pairs);
        if (json != null) {
            Files.writeString(json, Json.write(BenchReport.comparisonJson(c.key(), pairs)));
            System.out.println("  JSON written to " + json);
        }
        return 0;
    }
}
