package io.virtio4j.examples;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.worker.DeviceRunners;
import io.virtio4j.devices.worker.KickSwitch;
import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.os.Epoll;
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
    private final DeviceRunners<Worker, Long> runners = new DeviceRunners<>("upper-case-", 1, new int[0], 0,
            slot -> new Worker(), w -> w.answered, () -> 0L, (a, b) -> b == null ? a : a + b);

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
    public long answered() { return runners.totals(); }

    /** The work of the queue's thread (a QueueRunner: epoll on the kick eventfd, pinning, idle policy). */
    private static final class Worker implements QueueWorker {
        private final KickSwitch kick = new KickSwitch();
        private MemorySegment staging;
        private QueueContext queue;
        private volatile long answered; // written by the queue thread, read by the control thread

        @Override public void onStart(Arena arena, Epoll epoll) { staging = arena.allocate(4096); }
        @Override public void onAttach(QueueContext q) { queue = q; kick.reset(); }
        @Override public void onDetach(QueueContext q) { queue = null; kick.reset(); } // every pass published

        @Override public int doWork() {
            if (queue == null || !queue.enabled()) {
                return 0;
            }
            DeviceQueue q = queue.queue();
            int n = 0;
            try {
                for (DescriptorChain c; n < 64 && (c = q.pop()) != null; n++) { // pop checked every descriptor
                    long len = c.gather(0, staging, 0, Math.min(c.writableBytes(), staging.byteSize()));
                    for (long i = 0; i < len; i++) {
                        staging.set(JAVA_BYTE, i, (byte) Character.toUpperCase(staging.get(JAVA_BYTE, i)));
                    }
                    q.pushUsed(c.head(), c.scatter(0, staging, 0, len));
                }
                if (n > 0) {
                    q.flushUsed(); // one publication and at most one interrupt for the whole pass
                }
            } catch (VirtqueueException e) {
                // the driver broke a ring rule: the queue is broken now, and the runner reports it to the front-end
            }
            answered += n;
            return n;
        }

        @Override public boolean prepareSleep() { return queue == null || !queue.enabled() || kick.arm(queue); }
        @Override public void onWake(int events) { kick.disarm(queue); }
    }
}
// README:end
