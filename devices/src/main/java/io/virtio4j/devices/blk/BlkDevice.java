package io.virtio4j.devices.blk;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.devices.metrics.MetricsSource;
import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.devices.worker.DeviceRunners;
import io.virtio4j.devices.worker.QueueRunner;
import io.virtio4j.vhost.backend.ConfigWriteRefusedException;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.protocol.ConfigPayload;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.nio.charset.StandardCharsets;
import java.util.logging.Logger;

/**
 * A virtio-blk device (ID 2) over a {@link BlockStore}: {@code queues} request queues, each served by a
 * {@link QueueRunner} of its own with an I/O engine of its own ({@link BlockEngine}). The store stays the caller's
 * to close (after this device).
 *
 * <p>Offers VERSION_1, EVENT_IDX, INDIRECT_DESC, RING_PACKED, SIZE_MAX, SEG_MAX, BLK_SIZE, TOPOLOGY, FLUSH,
 * CONFIG_WCE, and DISCARD and WRITE_ZEROES unless read-only (RO then), MQ with more than one queue. The write cache
 * starts in writeback; a driver that negotiated CONFIG_WCE may switch it with a one-byte SET_CONFIG of
 * {@code writeback}, the only writable field. Request rules: {@link BlkRequests}.
 */
public final class BlkDevice implements VirtioDevice, MetricsSource, AutoCloseable {
    private static final Logger LOG = Logger.getLogger(BlkDevice.class.getName());
    /** Data segments per request offered (seg_max): a 128-entry ring's worth, as QEMU's queue size - 2. */
    public static final int SEG_MAX = 126;
    /** Largest single data segment offered (size_max). */
    public static final int SIZE_MAX = 1 << 20;
    /** Most sectors per DISCARD or WRITE_ZEROES segment: 1 GiB. */
    public static final long MAX_DISCARD_SECTORS = 1L << 21;

    /**
     * TEST ONLY, never for use: when this system property is "true", the queues do not mark the data of reads in the
     * dirty log (used rings still are). Pages the back-end fills during a live migration are then not sent again, and
     * the guest finds stale data after the move: the negative control of peers/qemu-migrate.sh, which proves its
     * check can fail. Read when a queue is attached; set by serve blk's hidden --debug-no-dirty-log.
     */
    public static final String DEBUG_SKIP_READ_DATA_LOG = "virtio4j.debug.blk.skipReadDataLog";

    /**
     * Options of a blk device. Errors name the component ({@link InvalidBlkOptionException#option()}).
     *
     * @param queues          request queues, in [1, 64]
     * @param engine          the I/O engine of each queue
     * @param depth           operations in flight per queue, in [1, 4096]
     * @param weight          requests taken per queue per pass, at least 1
     * @param cpus            CPUs to pin the queues' threads to, round robin (empty: not pinned)
     * @param id              GET_ID's answer: ASCII, at most 20 bytes
     * @param notification    how each queue is waited on
     * @param hybridSpinNanos how long HYBRID queues are spun on before their thread sleeps
     */
    public record Options(int queues, BlockEngine engine, int depth, int weight, int[] cpus, String id,
                          NotificationMode notification, long hybridSpinNanos) {
        public Options {
            if (queues < 1 || queues > 64) {
                throw new InvalidBlkOptionException("queues", queues, "must be in [1, 64]");
            }
            if (engine == null) {
                throw new InvalidBlkOptionException("engine", null, "an engine is required");
            }
            if (depth < 1 || depth > 4096) {
                throw new InvalidBlkOptionException("depth", depth, "must be in [1, 4096]");
            }
            if (weight < 1) {
                throw new InvalidBlkOptionException("weight", weight, "must be >= 1");
            }
            if (id == null || id.length() > BlkLayout.ID_BYTES || !StandardCharsets.US_ASCII.newEncoder().canEncode(id)) {
                throw new InvalidBlkOptionException("id", id, "must be ASCII, at most " + BlkLayout.ID_BYTES + " bytes");
            }
            if (notification == null) {
                throw new InvalidBlkOptionException("notification", null, "a mode is required");
            }
            if (hybridSpinNanos < 0) {
                throw new InvalidBlkOptionException("hybridSpinNanos", hybridSpinNanos, "must be >= 0");
            }
            cpus = cpus == null ? new int[0] : cpus.clone();
        }

        /**
         * Defaults but for the queue count, engine and depth: weight 64, not pinned, id "virtio4j", HYBRID spinning
         * {@link #DEFAULT_HYBRID_SPIN_NANOS} before sleeping.
         */
        /**
         * How long a queue thread spins for the next request before it sleeps on the kick: QEMU's IOThreads poll
         * their fds up to 32 us by default for the same reason. A block driver with requests in flight submits the
         * next one within microseconds of a completion; sleeping in between costs a kick (an eventfd write by the
         * driver, an epoll wake here) per request: measured with {@code peers/bench-blk.sh} (4 KiB randread, depth
         * 32, one queue, null device), NOTIFY served 0.37 M IOPS and HYBRID with 50 us 0.97 M.
         */
        public static final long DEFAULT_HYBRID_SPIN_NANOS = 50_000;

        public static Options of(int queues, BlockEngine engine, int depth) {
            return new Options(queues, engine, depth, 64, new int[0], "virtio4j", NotificationMode.HYBRID,
                    DEFAULT_HYBRID_SPIN_NANOS);
        }

        @Override
        public int[] cpus() {
            return cpus.clone();
        }
    }

    private final BlockStore store;
    private final Options options;
    private final WriteCache cache = new WriteCache();
    private final byte[] id;
    /** One runner per request queue. */
    private final DeviceRunners<BlkWorker, BlkStats> runners;
    private volatile long negotiated;

    public BlkDevice(BlockStore store, Options options) {
        this.store = store;
        this.options = options;
        this.id = options.id().getBytes(StandardCharsets.US_ASCII);
        this.runners = new DeviceRunners<>("virtio4j-blk-q", options.queues(), options.cpus(),
                options.hybridSpinNanos(), this::newWorker, BlkWorker::stats, BlkStats::new, BlkStats::plus);
    }

    @Override
    public long features() {
        long f = VirtioFeatures.bit(VirtioFeatures.VERSION_1)
                | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
                | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC)
                | VirtioFeatures.bit(VirtioFeatures.RING_PACKED)
                | BlkLayout.bit(BlkLayout.F_SIZE_MAX)
                | BlkLayout.bit(BlkLayout.F_SEG_MAX)
                | BlkLayout.bit(BlkLayout.F_BLK_SIZE)
                | BlkLayout.bit(BlkLayout.F_TOPOLOGY)
                | BlkLayout.bit(BlkLayout.F_FLUSH)
                | BlkLayout.bit(BlkLayout.F_CONFIG_WCE)
                // dirty logging for migration: BlkRequests marks read data, GET_ID answers and status bytes
                | VirtioFeatures.bit(ProtocolFeatures.VHOST_F_LOG_ALL);
        if (store.readOnly()) {
            f |= BlkLayout.bit(BlkLayout.F_RO);
        } else {
            f |= BlkLayout.bit(BlkLayout.F_DISCARD) | BlkLayout.bit(BlkLayout.F_WRITE_ZEROES);
        }
        if (options.queues() > 1) {
            f |= BlkLayout.bit(BlkLayout.F_MQ);
        }
        return f;
    }

    /** Remembers the negotiation; CONFIG_WCE without FLUSH starts the cache in writethrough (features.md §4.2). */
    @Override
    public void featuresNegotiated(long features) {
        negotiated = features;
        if (VirtioFeatures.has(features, BlkLayout.F_CONFIG_WCE) && !VirtioFeatures.has(features, BlkLayout.F_FLUSH)) {
            cache.writeback(false);
        }
    }

    /** The virtio features the front-end last set (SET_FEATURES), 0 before any. */
    public long negotiatedFeatures() {
        return negotiated;
    }

    @Override
    public int maxQueues() {
        return options.queues();
    }

    /**
     * MQ (GET_QUEUE_NUM: the request queues), CONFIG (GET_CONFIG, SET_CONFIG of writeback) and INFLIGHT_SHMFD:
     * requests complete out of order (io_uring), so after this back-end dies the front-end cannot tell from the ring
     * which ones it took and never finished; the inflight area tells the next back-end, which resubmits exactly
     * those (QEMU's vhost-user-blk uses it whenever offered).
     */
    @Override
    public long protocolFeatures() {
        return ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.CONFIG)
                | ProtocolFeatures.bit(ProtocolFeatures.INFLIGHT_SHMFD);
    }

    @Override
    public byte[] config() {
        return configSpace().encode();
    }

    /** The configuration space as GET_CONFIG answers it now. */
    public BlkConfig configSpace() {
        int blockSectors = store.blockSize() / BlkLayout.SECTOR;
        return new BlkConfig(store.size() / BlkLayout.SECTOR, SIZE_MAX, SEG_MAX, store.blockSize(), 0, 0, 1, 0,
                cache.writeback() ? 1 : 0, options.queues(),
                MAX_DISCARD_SECTORS, 1, blockSectors, MAX_DISCARD_SECTORS, 1, 1);
    }

    /**
     * The driver writes {@code writeback} (one byte, 0 or 1, CONFIG_WCE negotiated); every other write is refused.
     * Migration state has nothing to restore.
     */
    @Override
    public void setConfig(long offset, byte[] data, long flags) throws ConfigWriteRefusedException {
        if (flags == ConfigPayload.FLAG_MIGRATION) {
            return;
        }
        if (offset != BlkConfig.WRITEBACK || data.length != 1) {
            throw new ConfigWriteRefusedException(offset, data.length,
                    "only writeback (1 byte at " + BlkConfig.WRITEBACK + ") is writable");
        }
        if (!VirtioFeatures.has(negotiated, BlkLayout.F_CONFIG_WCE)) {
            throw new ConfigWriteRefusedException(offset, data.length, "writeback is writable only with CONFIG_WCE");
        }
        if (data[0] != 0 && data[0] != 1) {
            throw new ConfigWriteRefusedException(offset, data.length, "writeback is 0 or 1, not " + data[0]);
        }
        cache.writeback(data[0] == 1);
        LOG.info("write cache: " + (data[0] == 1 ? "writeback" : "writethrough") + " (the driver's SET_CONFIG)");
    }

    /** Whether the write cache is in writeback mode (config {@code writeback} = 1). */
    public boolean writeback() {
        return cache.writeback();
    }

    @Override
    public void startQueue(int index, QueueContext queue) {
        runners.attach(index, queue, options.notification());
    }

    @Override
    public void stopQueue(int index) {
        runners.detach(index, index);
    }

    @Override
    public void reset() {
        runners.reset();
    }

    /**
     * RESET_DEVICE: writeback back to 1. Not on a connection's end: the guest's driver may have switched to
     * writethrough, and a front-end that reconnects does not write it again, so writes would complete before they
     * are durable while the guest counts on the opposite.
     */
    @Override
    public void resetConfig() {
        cache.writeback(true);
    }

    /** Unmaps once every queue thread that did not stop has ended (never, if one never does). */
    @Override
    public void retire(Runnable unmap) {
        runners.retire(unmap);
    }

    private BlkWorker newWorker(int queue) {
        return new BlkWorker(queue, store, options.engine(), options.depth(), options.weight(), cache, id);
    }

    /** Statistics of request queue {@code queue} over the device's life, across connections. */
    public BlkStats stats(int queue) {
        return runners.stats(queue);
    }

    /** Every queue's statistics added up. */
    public BlkStats totals() {
        return runners.totals();
    }

    /**
     * Every queue's counters as samples, labelled {@code device}, {@code queue} and {@code direction="request"} (see
     * {@link BlkStats}); read without waiting for the queue threads.
     */
    @Override
    public void collect(PrometheusText out, String device) {
        BlkStats.collect(out, device, runners.allStats(BlkStats[]::new));
    }

    /** The id of the thread serving queue {@code queue} now, or -1 while it is not started. */
    public long workerThreadId(int queue) {
        return runners.threadId(queue);
    }

    public int queues() {
        return options.queues();
    }

    public BlockStore store() {
        return store;
    }

    /** Stops the queue threads; the store stays open (the caller's). */
    @Override
    public void close() {
        reset();
    }
}
