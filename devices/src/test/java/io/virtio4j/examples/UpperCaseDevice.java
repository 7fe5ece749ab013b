package io.virtio4j.examples;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.worker.ChainWorker;
import io.virtio4j.devices.worker.DeviceRunners;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.feature.VirtioFeatures.EVENT_IDX;
import static io.virtio4j.core.feature.VirtioFeatures.INDIRECT_DESC;
import static io.virtio4j.core.feature.VirtioFeatures.RING_PACKED;
import static io.virtio4j.core.feature.VirtioFeatures.VERSION_1;
import static io.virtio4j.core.feature.VirtioFeatures.bit;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

// The README's second example ("Use as a library"): a device on the device SPI, served over vhost-user to any
// front-end. The README shows the lines between the README: markers; ReadmeExamplesTest checks that they are these
// lines, word for word, and drives the device through a FrontendSession.
// README:device
/** One queue: each request's readable bytes come back upper-cased in its writable part, as many as fit. */
public final class UpperCaseDevice implements VirtioDevice {
    // The queue's thread (a QueueRunner: epoll on the kick eventfd, idle policy) runs a ChainWorker: the kick switch,
    // a disabled or broken ring, passes of at most 64 buffers published together. The device says what one gets.
    private final DeviceRunners<ChainWorker, ChainWorker.Stats> runners = new DeviceRunners<>("upper-case-", 1,
            new int[0], 0, slot -> new ChainWorker("upper-case", 64, new UpperCase()), ChainWorker::stats,
            ChainWorker.Stats::zero, ChainWorker.Stats::plus);

    @Override public long features() { // the ring features core implements for every device, nothing of its own
        return bit(VERSION_1) | bit(RING_PACKED) | bit(EVENT_IDX) | bit(INDIRECT_DESC);
    }
    @Override public int maxQueues() { return 1; }
    @Override public byte[] config() { return new byte[0]; }
    @Override public void startQueue(int index, QueueContext q) { runners.attach(0, q, NotificationMode.NOTIFY); }
    @Override public void stopQueue(int index) { runners.detach(0, index); }
    @Override public void reset() { runners.reset(); }
    @Override public void retire(Runnable unmap) { runners.retire(unmap); } // once no queue thread can touch it

    /** Requests answered over the device's life. */
    public long answered() { return runners.totals().buffers(); }

    /** What one request gets, on the queue's thread; pop checked every descriptor of the chain (the driver's). */
    private static final class UpperCase implements ChainWorker.Handler {
        private MemorySegment staging;

        @Override public void onStart(Arena arena) { staging = arena.allocate(4096); }

        @Override public long serve(DescriptorChain c) {
            long len = c.gather(0, staging, 0, Math.min(c.writableBytes(), staging.byteSize()));
            for (long i = 0; i < len; i++) {
                staging.set(JAVA_BYTE, i, (byte) Character.toUpperCase(staging.get(JAVA_BYTE, i)));
            }
            return c.scatter(0, staging, 0, len); // the bytes written: the used length
        }
    }
}
// README:end
