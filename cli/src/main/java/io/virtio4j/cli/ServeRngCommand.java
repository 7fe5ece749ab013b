package io.virtio4j.cli;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.rng.InvalidRngOptionException;
import io.virtio4j.devices.rng.RngDevice;
import io.virtio4j.devices.rng.RngSource;
import io.virtio4j.devices.worker.ChainWorker;
import io.virtio4j.vhost.backend.BackendOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code virtio4j serve rng}: a virtio-rng vhost-user back-end. */
@Command(name = "rng", mixinStandardHelpOptions = true, sortOptions = false,
        description = "A virtio-rng vhost-user back-end. Peers: QEMU (-chardev socket + vhost-user-rng-pci).",
        footer = {"", "Example: virtio4j serve rng --socket-path /tmp/rng.sock --seed 42"})
final class ServeRngCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    Serving.Endpoint endpoint;
    @Mixin
    Serving.Metrics metrics;
    @Option(names = "--source", paramLabel = "FILE", description = "serve the bytes of FILE, a regular file (not a device "
            + "such as /dev/urandom), from its start, over and over (default: the kernel's random bytes, getrandom)")
    Path source;
    @Option(names = "--seed", paramLabel = "N", description = "serve the SplitMix64 stream from state N: each 64-bit output "
            + "as 8 bytes, little-endian (a test source anyone can reproduce)")
    Long seed;
    @Option(names = "--cpu", split = ",", paramLabel = "CPU", description = "pin the queue thread to this CPU (the first given)")
    int[] cpus = new int[0];
    @Option(names = "--notify", paramLabel = "MODE", description = "poll | notify | hybrid: how the queue thread waits (default notify)",
            converter = Converters.ModeConverter.class)
    NotificationMode notification = NotificationMode.NOTIFY;
    @Option(names = "--hybrid-spin-ns", description = "hybrid: spin this long before sleeping (default ${DEFAULT-VALUE})")
    long hybridSpinNanos = RngDevice.DEFAULT_HYBRID_SPIN_NANOS;
    @Option(names = "--stats-period", paramLabel = "S", description = "print statistics every S seconds (0: only at exit)")
    int statsPeriod = 0;

    @Override
    public Integer call() throws Exception {
        if (endpoint.printCapabilities(spec, "rng", null)) {
            return 0;
        }
        endpoint.check(spec);
        metrics.check(spec, endpoint);
        if (source != null && seed != null) {
            throw new ParameterException(spec.commandLine(), "--source=" + source + ", --seed=" + seed + ": give at most one");
        }
        RngSource from;
        RngDevice device;
        try {
            from = source != null ? RngSource.file(source) : seed != null ? RngSource.seed(seed) : RngSource.os();
            device = new RngDevice(from, notification, cpus, hybridSpinNanos);
        } catch (InvalidRngOptionException e) {
            throw Converters.refused(spec, e, o -> "hybridSpinNanos".equals(o) ? "--hybrid-spin-ns" : "--" + o); // source
        }
        String what = source != null ? "file " + source : seed != null ? "SplitMix64 seed " + seed : "getrandom";
        Runnable shutdown = () -> {
            device.close();
            print(device, "final");
        };
        Serving.serve(endpoint, metrics, device, "rng", BackendOptions.defaults(), statsPeriod,
                () -> print(device, "stats"), shutdown, "virtio4j serve rng: " + what + ", " + notification.name().toLowerCase(Locale.ROOT));
        return 0;
    }

    private static void print(RngDevice device, String what) {
        ChainWorker.Stats s = device.stats();
        if ("final".equals(what)) {
            // One machine-readable line, as the real-peer scripts expect from any back-end.
            System.out.printf(Locale.ROOT, "RESULT role=virtio4j buffers=%d bytes=%d%n", s.buffers(), s.bytes());
        } else {
            System.out.printf(Locale.ROOT, "stats requestq: buffers=%d bytes=%d | kicks=%d notifications=%d"
                    + " suppressed=%d%n", s.buffers(), s.bytes(), s.kicks(), s.notifications(), s.notificationsSuppressed());
        }
        System.out.flush();
    }
}
