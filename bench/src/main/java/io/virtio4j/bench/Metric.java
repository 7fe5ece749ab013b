package io.virtio4j.bench;

import java.util.List;
import java.util.function.ToDoubleFunction;

/** A figure the benchmark reports for every run, with its JSON key and how to read it off a run. */
public enum Metric {
    BUFFERS_PER_S("buffers_per_s", "buffers/s", "%,.0f", RunResult::buffersPerSecond),
    NS_PER_BUFFER("ns_per_buffer", "ns/buffer", "%,.1f", RunResult::nanosPerBuffer),
    ELAPSED_MS("elapsed_ms", "elapsed ms", "%,.1f", r -> r.elapsedNanos() / 1e6),
    DRIVER_CPU_MS("driver_cpu_ms", "driver CPU ms", "%,.1f", r -> r.driverCpuNanos() / 1e6),
    DEVICE_CPU_MS("device_cpu_ms", "device CPU ms", "%,.1f", r -> r.deviceCpuNanos() / 1e6),
    /**
     * CPU time of the driver and the device thread together per buffer: beside the wall-clock figures because a
     * spinning thread that loses its CPU to another process adds wall time, not CPU time.
     */
    CPU_NS_PER_BUFFER("cpu_ns_per_buffer", "CPU ns/buffer", "%,.1f",
            r -> r.perBuffer(r.driverCpuNanos() + r.deviceCpuNanos())),
    KICKS_PER_BUFFER("kicks_per_buffer", "kicks/buffer", "%.5f", r -> r.perBuffer(r.driver().kicksSent)),
    KICKS_SUPPRESSED_PER_BUFFER("kicks_suppressed_per_buffer", "kicks suppressed/buffer", "%.5f",
            r -> r.perBuffer(r.driver().kicksSuppressed)),
    NOTIFICATIONS_PER_BUFFER("notifications_per_buffer", "notifications/buffer", "%.5f",
            r -> r.perBuffer(r.device().notificationsSent)),
    AVAIL_IDX_READS_PER_BUFFER("avail_idx_reads_per_buffer", "avail.idx reads/buffer", "%.4f",
            r -> r.perBuffer(r.device().availIdxReads)),
    AVAIL_IDX_WRITES_PER_BUFFER("avail_idx_writes_per_buffer", "avail.idx writes/buffer", "%.4f",
            r -> r.perBuffer(r.driver().availIdxWrites)),
    /** Split rings: the driver's avail.ring entry stores, fewer than one a buffer under IN_ORDER (0 for packed). */
    AVAIL_ENTRY_WRITES_PER_BUFFER("avail_entry_writes_per_buffer", "avail entry writes/buffer", "%.4f",
            r -> r.perBuffer(r.driver().availEntryWrites)),
    USED_IDX_READS_PER_BUFFER("used_idx_reads_per_buffer", "used.idx reads/buffer", "%.4f",
            r -> r.perBuffer(r.driver().usedIdxReads)),
    USED_IDX_WRITES_PER_BUFFER("used_idx_writes_per_buffer", "used.idx writes/buffer", "%.4f",
            r -> r.perBuffer(r.device().usedIdxWrites)),
    STRONG_FENCES_PER_BUFFER("strong_fences_per_buffer", "STRONG fences/buffer", "%.4f",
            r -> r.perBuffer(r.driver().strongFences + r.device().strongFences)),
    /** Request-response runs: the median round trip of a transaction, from adding the request to reaping the answer. */
    ROUND_TRIP_P50_NS("round_trip_p50_ns", "round trip p50 ns", "%,.0f", r -> r.roundTripNanos(50)),
    ROUND_TRIP_P99_NS("round_trip_p99_ns", "round trip p99 ns", "%,.0f", r -> r.roundTripNanos(99)),
    SPURIOUS_WAKEUPS("spurious_wakeups", "spurious wake-ups", "%,.0f",
            r -> r.driverSpurious() + r.deviceSpurious()),
    GC_COUNT("gc_count", "GC count", "%,.0f", r -> r.gcCount()),
    ALLOCATED_BYTES("allocated_bytes", "allocated bytes", "%,.0f", r -> r.allocatedBytes()),
    ALLOCATED_BYTES_PER_BUFFER("allocated_bytes_per_buffer", "allocated bytes/buffer", "%.4f",
            r -> r.perBuffer(r.allocatedBytes())),
    PROBE_NS("probe_ns", "ping-pong ns (before)", "%,.0f", RunResult::probeBeforeNanos),
    PROBE_AFTER_NS("probe_after_ns", "ping-pong ns (after)", "%,.0f", RunResult::probeAfterNanos),
    DIRTY_PAGES("dirty_pages", "dirty-log pages marked", "%,.0f", r -> r.dirtyPages());

    /**
     * Whether runs of {@code cfg} have this figure to show (the dirty log's pages only with one, round trips only
     * for request-response).
     */
    boolean shownFor(BenchConfig cfg) {
        return switch (this) {
            case DIRTY_PAGES -> cfg.dirtyLog();
            case ROUND_TRIP_P50_NS, ROUND_TRIP_P99_NS -> cfg.pattern() == TrafficPattern.RR;
            default -> true;
        };
    }

    private final String key;
    private final String label;
    private final String format;
    private final ToDoubleFunction<RunResult> extractor;

    Metric(String key, String label, String format, ToDoubleFunction<RunResult> extractor) {
        this.key = key;
        this.label = label;
        this.format = format;
        this.extractor = extractor;
    }

    public String key() {
        return key;
    }

    public String label() {
        return label;
    }

    public String format(double v) {
        return String.format(java.util.Locale.ROOT, format, v);
    }

    public double of(RunResult r) {
        return extractor.applyAsDouble(r);
    }

    public Summary summarize(List<RunResult> runs) {
        double[] v = new double[runs.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = of(runs.get(i));
        }
        return Summary.of(v);
    }
}
