package io.virtio4j.bench;

import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.ordering.Ordering;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One ring benchmark configuration: the shape of the traffic and every ring policy.
 *
 * @param bufs             buffers moved per run
 * @param ringSize         queue size
 * @param ring             ring format, split or packed, both sides
 * @param batch            buffers the driver adds before kicking, and the device pushes before publishing
 * @param bufSize          bytes per buffer element
 * @param chain            elements per buffer (1: one readable element; n &gt; 1: n-1 readable + 1 writable)
 * @param indirect         chains of 2+ elements go through indirect tables
 * @param eventIdx         VIRTIO_F_EVENT_IDX on both sides
 * @param inOrder          VIRTIO_F_IN_ORDER on both sides
 * @param delayedInterrupt driver arms used-buffer notifications with enableCallbacksDelayedOrFindPending
 * @param barriers         WEAK or STRONG, both sides
 * @param availPublish     driver's avail.idx publication policy
 * @param reclaim          when a stream run's driver takes used buffers back: after every round of adds, or only
 *                         after a round that could not add a whole batch ({@link Reclaim})
 * @param cachedAvail      device caches the avail index read while re-enabling kicks
 * @param mode             POLL, NOTIFY or HYBRID, both sides
 * @param toggleNotify     device disables and re-enables kicks around every pop (forced-path experiment)
 * @param hybridSpinNanos  HYBRID: spin this long before arming notifications and sleeping
 * @param verify           driver writes a sequence number, device echoes it, driver checks it
 * @param driverCpu        CPU to pin the driver thread to, or -1
 * @param deviceCpu        CPU to pin the device thread to, or -1
 * @param inflight         the device queue records every buffer it holds in an inflight region (vhost-user's
 *                         INFLIGHT_SHMFD tracking: {@code DeviceQueue.restart(state, region)} over a fresh region of
 *                         {@code InflightLayout.queueRegionBytes}), as a back-end with an inflight area does
 * @param dirtyLog         the device queue logs its used-ring writes, and the device the data it writes, in a dirty-page
 *                         bitmap ({@code core.memory.DirtyLog}) sized for the run's guest memory, as a vhost-user
 *                         back-end does while a migration runs (VHOST_F_LOG_ALL)
 * @param pattern          {@link TrafficPattern#STREAM} (the ring kept full) or {@link TrafficPattern#RR}
 *                         (request-response: one buffer in flight, needs {@code batch} 1, a request and a writable
 *                         answer ({@code chain} &gt;= 2) and {@code bufSize} &gt;= 8; every answer is checked, so
 *                         {@code verify} adds nothing)
 * @param flightRecording  each run under a JFR recording of {@code flightRecordingSettings}, started before the run
 *                         and closed after it (in process only: {@link RingBenchmark#run}); the ring path emits no
 *                         event, so what it costs is the recorder's own work (its sampler, periodic events, buffers)
 *                         beside the ring: {@code --compare flight-recording=off,on} in one JVM, free of per-launch luck
 * @param flightRecordingSettings the recording's settings: a JDK configuration by name ({@code default}, as
 *                         {@code -XX:StartFlightRecording} with no settings, or {@code profile}) or a {@code .jfc} file,
 *                         e.g. {@code share/virtio4j/jfr/virtio4j.jfc} (virtio4j's events only, what a back-end
 *                         recording them runs with)
 */
public record BenchConfig(long bufs, int ringSize, RingFormat ring, int batch, int bufSize, int chain,
                          boolean indirect, boolean eventIdx, boolean inOrder, boolean delayedInterrupt,
                          Ordering barriers, AvailPublication availPublish, Reclaim reclaim, boolean cachedAvail, NotificationMode mode,
                          boolean toggleNotify, long hybridSpinNanos, boolean verify, int driverCpu, int deviceCpu,
                          boolean inflight, boolean dirtyLog, TrafficPattern pattern,
                          boolean flightRecording, String flightRecordingSettings) {

    /** The JDK's own JFR configurations, by name; any other value of {@code flightRecordingSettings} is a file. */
    public static final java.util.Set<String> JDK_RECORDING_SETTINGS = java.util.Set.of("default", "profile");

    public BenchConfig {
        if (flightRecordingSettings == null || !(JDK_RECORDING_SETTINGS.contains(flightRecordingSettings)
                || java.nio.file.Files.isReadable(java.nio.file.Path.of(flightRecordingSettings)))) {
            throw new InvalidBenchOptionException("%s must be default, profile or a readable .jfc file, got "
                    + flightRecordingSettings, "flightRecordingSettings");
        }
        if (bufs < 1) {
            throw new InvalidBenchOptionException("%s must be >= 1, got " + bufs, "bufs");
        }
        if (ring == null) {
            throw new InvalidBenchOptionException("%s is required", "ring");
        }
        if (ring == RingFormat.SPLIT && !SplitLayout.isValidQueueSize(ringSize)) {
            throw new InvalidBenchOptionException("%s must be a power of two in [1, " + SplitLayout.MAX_QUEUE_SIZE
                    + "], got " + ringSize, "ringSize");
        }
        if (ring == RingFormat.PACKED && !PackedLayout.isValidQueueSize(ringSize)) {
            throw new InvalidBenchOptionException("%s must be in [1, " + PackedLayout.MAX_QUEUE_SIZE
                    + "] with %s packed, got " + ringSize, "ringSize", "ring");
        }
        if (batch < 1) {
            throw new InvalidBenchOptionException("%s must be >= 1, got " + batch, "batch");
        }
        if (bufSize < 1) {
            throw new InvalidBenchOptionException("%s must be >= 1, got " + bufSize, "bufSize");
        }
        if (chain < 1 || chain > ringSize && !indirect) {
            throw new InvalidBenchOptionException("%s must be in [1, %s], got " + chain + " with a ring of " + ringSize,
                    "chain", "ringSize");
        }
        if (indirect && (chain < 2 || chain > ringSize)) {
            throw new InvalidBenchOptionException("%s needs %s in [2, %s], got " + chain + " with a ring of "
                    + ringSize, "indirect", "chain", "ringSize");
        }
        if (verify && bufSize < 8) {
            throw new InvalidBenchOptionException("%s needs %s >= 8, got " + bufSize, "verify", "bufSize");
        }
        if (pattern == null) {
            throw new InvalidBenchOptionException("%s is required", "pattern");
        }
        if (reclaim == null) {
            throw new InvalidBenchOptionException("%s is required", "reclaim");
        }
        if (pattern == TrafficPattern.RR) {
            // one buffer in flight: a batch larger than 1 could never fill, and the device would publish its one
            // answer only after finding the ring empty, an extra load on the critical path
            if (batch != 1) {
                throw new InvalidBenchOptionException("%s must be 1 with %s rr (one buffer in flight), got " + batch,
                        "batch", "pattern");
            }
            if (chain < 2) {
                throw new InvalidBenchOptionException("%s must be >= 2 with %s rr (a request and a writable answer), got "
                        + chain, "chain", "pattern");
            }
            // the first 8 bytes of a request are its sequence number, so an answer left over from the previous
            // transaction can never pass the check
            if (bufSize < 8) {
                throw new InvalidBenchOptionException("%s must be >= 8 with %s rr, got " + bufSize, "bufSize", "pattern");
            }
        }
    }

    public static BenchConfig defaults() {
        return new BenchConfig(2_000_000, 256, RingFormat.SPLIT, 64, 64, 1, false, true, false, false,
                Ordering.WEAK, AvailPublication.EAGER, Reclaim.LAZY, true, NotificationMode.POLL, false, 50_000, false, 0, 1, false,
                false, TrafficPattern.STREAM, false, "default");
    }

    /**
     * This configuration as request-response ({@link TrafficPattern#RR}): one buffer in flight (batch 1) of a request
     * element and a writable answer element (chain 2), each {@code bufSize} bytes.
     */
    public BenchConfig requestResponse() {
        return with(Map.of("pattern", "rr", "batch", "1", "chain", "2"));
    }

    /**
     * This configuration with option {@code key} (a bench option name without dashes, as in
     * {@code --compare barriers=weak,strong}) set to {@code value}.
     */
    public BenchConfig with(String key, String value) {
        return with(Map.of(key, value));
    }

    /**
     * This configuration with every option of {@code options} set at once, so that options checked together
     * ({@code queue-size} with {@code ring}) may change together.
     */
    public BenchConfig with(Map<String, String> options) {
        Map<String, String> m = toMap();
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (!m.containsKey(e.getKey())) {
                throw new InvalidBenchOptionException("%s is not a benchmark option; known: "
                        + InvalidBenchOptionException.literal(String.join(", ", m.keySet())), e.getKey());
            }
            m.put(e.getKey(), e.getValue().trim().toLowerCase(Locale.ROOT));
        }
        return fromMap(m);
    }

    /** Option name to value, in the spelling of the command line. */
    public Map<String, String> toMap() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("bufs", Long.toString(bufs));
        m.put("queue-size", Integer.toString(ringSize));
        m.put("ring", ring.name().toLowerCase(Locale.ROOT));
        m.put("batch", Integer.toString(batch));
        m.put("buf-size", Integer.toString(bufSize));
        m.put("chain", Integer.toString(chain));
        m.put("indirect", Boolean.toString(indirect));
        m.put("event-idx", Boolean.toString(eventIdx));
        m.put("in-order", inOrder ? "on" : "off");
        m.put("delayed-interrupt", Boolean.toString(delayedInterrupt));
        m.put("barriers", barriers.name().toLowerCase(Locale.ROOT));
        m.put("avail-publish", availPublish.name().toLowerCase(Locale.ROOT));
        m.put("reclaim", reclaim.name().toLowerCase(Locale.ROOT));
        m.put("cached-avail", cachedAvail ? "on" : "off");
        m.put("notify", mode.name().toLowerCase(Locale.ROOT));
        m.put("toggle-notify", Boolean.toString(toggleNotify));
        m.put("hybrid-spin-ns", Long.toString(hybridSpinNanos));
        m.put("verify", Boolean.toString(verify));
        m.put("driver-cpu", Integer.toString(driverCpu));
        m.put("device-cpu", Integer.toString(deviceCpu));
        m.put("inflight", inflight ? "on" : "off");
        m.put("dirty-log", dirtyLog ? "on" : "off");
        m.put("pattern", pattern.name().toLowerCase(Locale.ROOT));
        m.put("flight-recording", flightRecording ? "on" : "off");
        m.put("flight-recording-settings", flightRecordingSettings);
        return m;
    }

    private static BenchConfig fromMap(Map<String, String> m) {
        return new BenchConfig(
                Long.parseLong(m.get("bufs")),
                Integer.parseInt(m.get("queue-size")),
                enumOf(RingFormat.class, m, "ring"),
                Integer.parseInt(m.get("batch")),
                Integer.parseInt(m.get("buf-size")),
                Integer.parseInt(m.get("chain")),
                bool(m, "indirect"),
                bool(m, "event-idx"),
                bool(m, "in-order"),
                bool(m, "delayed-interrupt"),
                enumOf(Ordering.class, m, "barriers"),
                enumOf(AvailPublication.class, m, "avail-publish"),
                enumOf(Reclaim.class, m, "reclaim"),
                bool(m, "cached-avail"),
                enumOf(NotificationMode.class, m, "notify"),
                bool(m, "toggle-notify"),
                Long.parseLong(m.get("hybrid-spin-ns")),
                bool(m, "verify"),
                Integer.parseInt(m.get("driver-cpu")),
                Integer.parseInt(m.get("device-cpu")),
                bool(m, "inflight"),
                bool(m, "dirty-log"),
                enumOf(TrafficPattern.class, m, "pattern"),
                bool(m, "flight-recording"),
                m.get("flight-recording-settings"));
    }

    private static boolean bool(Map<String, String> m, String k) {
        String v = m.get(k);
        return switch (v) {
            case "true", "on", "yes", "1" -> true;
            case "false", "off", "no", "0" -> false;
            default -> throw new IllegalArgumentException(k + ": expected true/false or on/off, got '" + v + "'");
        };
    }

    private static <E extends Enum<E>> E enumOf(Class<E> type, Map<String, String> m, String k) {
        String v = m.get(k);
        try {
            return Enum.valueOf(type, v.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(k + ": unknown value '" + v + "'", e);
        }
    }

    /** One line describing the configuration. */
    public String describe() {
        return (pattern == TrafficPattern.RR ? "request-response, " : "")
                + ring.name().toLowerCase(Locale.ROOT) + " ring " + ringSize + ", batch " + batch + ", " + chain + " x "
                + bufSize + " B"
                + (indirect ? " indirect" : "") + ", notify " + mode.name().toLowerCase(Locale.ROOT)
                + ", barriers " + barriers.name().toLowerCase(Locale.ROOT)
                + ", avail-publish " + availPublish.name().toLowerCase(Locale.ROOT)
                + (pattern == TrafficPattern.STREAM ? ", reclaim " + reclaim.name().toLowerCase(Locale.ROOT) : "")
                + ", cached-avail " + (cachedAvail ? "on" : "off")
                + ", event-idx " + (eventIdx ? "on" : "off")
                + ", in-order " + (inOrder ? "on" : "off")
                + ", inflight " + (inflight ? "on" : "off")
                + ", dirty-log " + (dirtyLog ? "on" : "off")
                + (delayedInterrupt ? ", delayed-interrupt" : "")
                + (toggleNotify ? ", toggle-notify" : "")
                + (verify ? ", verify" : "")
                + (flightRecording ? ", flight-recording" + ("default".equals(flightRecordingSettings) ? ""
                        : " (" + flightRecordingSettings + ")") : "");
    }
}
