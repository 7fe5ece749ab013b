package io.virtio4j.cli;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.BlkDevice;
import io.virtio4j.devices.blk.BlkStats;
import io.virtio4j.devices.blk.InvalidBlkOptionException;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.vhost.backend.BackendOptions;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code virtio4j serve blk}: a virtio-blk vhost-user back-end over a file, a block device or nothing. */
@Command(name = "blk", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"A virtio-blk vhost-user back-end. Peers: QEMU (-chardev socket + vhost-user-blk-pci), "
                + "qemu-storage-daemon's clients, virtio4j drive blk."},
        footer = {"", "Example: virtio4j serve blk --socket-path /tmp/blk.sock --null 1G --io io_uring"})
final class ServeBlkCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    static final class Backing {
        @Option(names = {"--file", "--blk-file"}, paramLabel = "PATH", description = "serve this file or block device (it must exist)")
        String file;
        @Option(names = "--null", paramLabel = "SIZE", description = "serve SIZE bytes of nothing (e.g. 1G): reads leave "
                + "the guest's buffers as they were, writes are dropped", converter = SizeConverter.class)
        Long nullSize;
    }

    @Mixin
    Serving.Endpoint endpoint;
    @Mixin
    Serving.Metrics metrics;
    /** Exactly one, checked in {@link #call()} rather than by the group: {@code --print-capabilities} needs neither. */
    @ArgGroup
    Backing backing;
    @Option(names = "--read-only", description = "offer the device read-only (RO): writes fail with IOERR")
    boolean readOnly;
    @Option(names = "--queues", description = "request queues, one thread each (default ${DEFAULT-VALUE})")
    int queues = 1;
    @Option(names = "--block-size", description = "logical block size: 512 or 4096 (default ${DEFAULT-VALUE})")
    int blockSize = 512;
    @Option(names = "--io", paramLabel = "sync|io_uring", description = "I/O engine of each queue (default ${DEFAULT-VALUE})")
    String io = "sync";
    @Option(names = "--iodepth", description = "operations in flight per queue (default ${DEFAULT-VALUE})")
    int depth = 128;
    @Option(names = "--id", description = "serial answered to GET_ID, ASCII, at most 20 bytes (default ${DEFAULT-VALUE})")
    String id = "virtio4j";
    @Option(names = "--cpu", split = ",", paramLabel = "CPU", description = "pin queue threads to these CPUs, round robin")
    int[] cpus = new int[0];
    @Option(names = "--weight", description = "requests taken per queue per round (default ${DEFAULT-VALUE})")
    int weight = 64;
    @Option(names = "--notify", paramLabel = "MODE", description = "poll | notify | hybrid: how queue threads wait (default hybrid: spin --hybrid-spin-ns for the next request, then sleep on the kick)",
            converter = Converters.ModeConverter.class)
    NotificationMode notification = NotificationMode.HYBRID;
    @Option(names = "--hybrid-spin-ns", description = "hybrid: spin this long before sleeping (default ${DEFAULT-VALUE})")
    long hybridSpinNanos = BlkDevice.Options.DEFAULT_HYBRID_SPIN_NANOS;
    @Option(names = "--stats-period", paramLabel = "S", description = "print per-queue statistics every S seconds (0: only at exit)")
    int statsPeriod = 0;
    // TEST ONLY (hidden): the negative control of peers/qemu-migrate.sh; see BlkDevice.DEBUG_SKIP_READ_DATA_LOG
    @Option(names = "--debug-no-dirty-log", hidden = true)
    boolean debugNoDirtyLog;

    @Override
    public Integer call() throws Exception {
        // vhost-user.json's VHostUserBackendBlockFeature: the conventional options this back-end takes.
        if (endpoint.printCapabilities(spec, "block", List.of("read-only", "blk-file"))) {
            return 0;
        }
        if (backing == null) {
            throw new ParameterException(spec.commandLine(), "one of --file=PATH (or --blk-file=PATH) or --null=SIZE is required");
        }
        endpoint.check(spec);
        metrics.check(spec, endpoint);
        if (debugNoDirtyLog) {
            System.setProperty(BlkDevice.DEBUG_SKIP_READ_DATA_LOG, "true");
            System.err.println("virtio4j serve blk: TEST ONLY --debug-no-dirty-log: read data is not marked in the dirty log");
        }
        BlkDevice.Options options;
        BlockStore store;
        try {
            options = new BlkDevice.Options(queues, BlockEngine.of(io), depth, weight, cpus, id, notification,
                    hybridSpinNanos);
            store = backing.file != null ? BlockStore.open(backing.file, readOnly, blockSize)
                    : BlockStore.ofNull(backing.nullSize, readOnly, blockSize);
        } catch (InvalidBlkOptionException e) {
            throw refused(e);
        }
        BlkDevice device = new BlkDevice(store, options);
        if (!store.isNull()) {
            // An engine that is not built fails here, before a front-end connects, rather than on its first ring.
            try {
                options.engine().open(store, 1).close();
            } catch (InvalidBlkOptionException e) {
                store.close();
                throw refused(e);
            }
        }
        // On SIGINT and SIGTERM, once the back-end stops accepting: stop the queue threads (each waits for its
        // operations in flight), then print the summary and close the store.
        Runnable shutdown = () -> {
            device.close();
            print(device, "final");
            store.close();
        };
        String banner = String.format(Locale.ROOT, "virtio4j serve blk: %s, %d bytes, block %d, %d queue(s), io %s, iodepth %d%s",
                store, store.size(), store.blockSize(), queues, options.engine().label(), depth,
                readOnly ? ", read-only" : "");
        Serving.serve(endpoint, metrics, device, "blk", BackendOptions.defaults(), statsPeriod,
                () -> print(device, "stats"), shutdown, banner);
        return 0;
    }

    private ParameterException refused(InvalidBlkOptionException e) {
        return Converters.refused(spec, e, ServeBlkCommand::flag);
    }

    /** The flag that sets a {@link BlkDevice.Options} or {@link BlockStore} option. */
    static String flag(String option) {
        return switch (option) {
            case "blockSize" -> "--block-size";
            case "cpus" -> "--cpu";
            case "engine" -> "--io";
            case "notification" -> "--notify";
            case "hybridSpinNanos" -> "--hybrid-spin-ns";
            case "size" -> "--null";
            case "depth" -> "--iodepth";
            default -> "--" + option; // queues, weight, id, io, file
        };
    }

    private static void print(BlkDevice device, String what) {
        BlkStats t = device.totals();
        if ("final".equals(what)) {
            // One machine-readable line, as the real-peer scripts expect from any back-end.
            System.out.printf(Locale.ROOT, "RESULT role=virtio4j requests=%d reads=%d writes=%d flushes=%d read-bytes=%d "
                            + "written-bytes=%d io-errors=%d invalid=%d unsupported=%d malformed=%d features=0x%x%n",
                    t.requests(), t.reads(), t.writes(), t.flushes(), t.bytesRead(), t.bytesWritten(), t.ioErrors(),
                    t.invalid(), t.unsupported(), t.malformed(), device.negotiatedFeatures());
        }
        for (int q = 0; q < device.queues(); q++) {
            System.out.printf(Locale.ROOT, "%s queue %d: %s%n", what, q, device.stats(q));
        }
        System.out.flush();
    }
}
