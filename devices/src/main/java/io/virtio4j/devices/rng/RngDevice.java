package io.virtio4j.devices.rng;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.error.UnexpectedReadableException;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.metrics.MetricsSource;
import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.devices.worker.ChainWorker;
import io.virtio4j.devices.worker.DeviceRunners;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A virtio-rng device (ID 4): one queue, requestq, of device-writable buffers, each filled with the next bytes of an
 * {@link RngSource}; no configuration space, no device features. The example of a device on the SPI: the ring
 * machinery checks every chain, {@link DeviceRunners} owns the queue thread, {@link ChainWorker} the passes, and the
 * device is what one buffer gets. A buffer with a readable element breaks the queue
 * ({@link UnexpectedReadableException}); a buffer gets at most {@link #MAX_BYTES_PER_BUFFER}, whatever it offers.
 */
public final class RngDevice implements VirtioDevice, MetricsSource, AutoCloseable {
    /** The most bytes one buffer gets (Linux asks for 64 at a time): a pass stays short however large the buffers. */
    public static final int MAX_BYTES_PER_BUFFER = 64 << 10;

    private final RngSource source;
    private final NotificationMode notification;
    private final DeviceRunners<ChainWorker, ChainWorker.Stats> runners;

    /**
     * How long a HYBRID queue thread spins for the next buffer before it sleeps on the kick (blk's default: a driver
     * that posts its next buffer at once is served without a kick).
     */
    public static final long DEFAULT_HYBRID_SPIN_NANOS = 50_000;

    /** Serves {@code source}'s bytes; the queue thread, not pinned, waits as {@code notification} says. */
    public RngDevice(RngSource source, NotificationMode notification) {
        this(source, notification, new int[0], DEFAULT_HYBRID_SPIN_NANOS);
    }

    /**
     * Serves {@code source}'s bytes.
     *
     * @param notification    how the queue thread waits
     * @param cpus            CPUs to pin the queue's thread to (the first; empty: not pinned)
     * @param hybridSpinNanos HYBRID: how long the thread spins before it sleeps (at least 0)
     * @throws InvalidRngOptionException naming {@code hybridSpinNanos} when it is negative
     */
    public RngDevice(RngSource source, NotificationMode notification, int[] cpus, long hybridSpinNanos) {
        if (hybridSpinNanos < 0) {
            throw new InvalidRngOptionException("hybridSpinNanos", hybridSpinNanos, "must be >= 0");
        }
        this.source = source;
        this.notification = notification;
        // One thread; 64 buffers a pass: Linux keeps one posted, and a driver that posts a whole ring is still served
        // in bounded passes.
        this.runners = new DeviceRunners<>("virtio4j-rng-q", 1, cpus == null ? new int[0] : cpus, hybridSpinNanos,
                q -> new ChainWorker("rng requestq", 64, new Requests()), ChainWorker::stats, ChainWorker.Stats::zero,
                ChainWorker.Stats::plus);
    }

    @Override
    public long features() {
        return VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
                | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) | VirtioFeatures.bit(VirtioFeatures.RING_PACKED);
    }

    @Override
    public int maxQueues() {
        return 1;
    }

    @Override
    public byte[] config() {
        return new byte[0];
    }

    @Override
    public void startQueue(int index, QueueContext queue) {
        runners.attach(0, queue, notification);
    }

    @Override
    public void stopQueue(int index) {
        runners.detach(0, index);
    }

    @Override
    public void reset() {
        runners.reset();
    }

    @Override
    public void retire(Runnable unmap) {
        runners.retire(unmap);
    }

    /** Buffers answered and bytes of the source given out over the device's life (the bytes: where the stream stands). */
    public ChainWorker.Stats stats() {
        return runners.stats(0);
    }

    /** requestq's counters ({@link ChainWorker.Stats#collect}), for {@code --metrics}. */
    @Override
    public void collect(PrometheusText out, String device) {
        stats().collect(out, device, 0);
    }

    /** The id of the thread serving requestq now, or -1 while it is not started. */
    public long workerThreadId() {
        return runners.threadId(0);
    }

    @Override
    public void close() {
        reset();
    }

    /** What one buffer gets: the next bytes of the source, through staging memory of the queue thread. */
    private final class Requests implements ChainWorker.Handler {
        private MemorySegment staging;

        @Override
        public void onStart(Arena arena) {
            staging = arena.allocate(MAX_BYTES_PER_BUFFER);
        }

        @Override
        public long serve(DescriptorChain c) {
            if (c.readableCount() != 0) {
                throw new UnexpectedReadableException("requestq buffer " + c.head() + " readable bytes", c.readableBytes(),
                        "virtio-rng buffers are device-writable only");
            }
            long len = Math.min(c.writableBytes(), MAX_BYTES_PER_BUFFER);
            source.fill(staging, len);
            return c.scatter(0, staging, 0, len);
        }
    }
}
