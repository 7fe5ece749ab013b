package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.BlkConfig;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.worker.KickSwitch;
import io.virtio4j.devices.worker.QueueRunner;
import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.lang.foreign.MemorySegment;

/**
 * A one-queue virtio-blk lookalike that does what the real {@code BlkDevice} never does: it performs no I/O and
 * answers every request with the status byte the test sets in {@link #status}, a value outside the spec (7)
 * included, or, with {@link #NO_STATUS}, writes no status at all and reports 0 bytes written. Only for tests of
 * how a driver takes a device's bad answers; set back to OK it lets the test show the queue goes on.
 */
final class StatusForgingBlkDevice implements VirtioDevice {
    /** {@link #status} value: write no status byte, used length 0. */
    static final int NO_STATUS = 256;

    volatile int status = BlkLayout.S_OK;
    private QueueRunner runner;

    @Override
    public long features() {
        return VirtioFeatures.bit(VirtioFeatures.VERSION_1) | BlkLayout.bit(BlkLayout.F_FLUSH);
    }

    @Override
    public long protocolFeatures() {
        return ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.CONFIG);
    }

    @Override
    public int maxQueues() {
        return 1;
    }

    /** 1 MiB; every field the driver checks is valid (only the answers are wrong). */
    @Override
    public byte[] config() {
        return new BlkConfig(2048, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0).encode();
    }

    @Override
    public synchronized void startQueue(int index, QueueContext queue) {
        if (runner == null) {
            runner = new QueueRunner("status-forging-blk", -1, 0, new Forger());
        }
        runner.attach(queue, NotificationMode.NOTIFY);
    }

    @Override
    public synchronized void stopQueue(int index) {
        if (runner != null) {
            runner.detach(index);
        }
    }

    @Override
    public synchronized void reset() {
        if (runner != null) {
            runner.close();
            runner = null;
        }
    }

    /** Answers whatever is on the queue, on the runner's thread. */
    private final class Forger implements QueueWorker {
        private final KickSwitch kick = new KickSwitch();
        private QueueContext queue;

        @Override
        public void onAttach(QueueContext q) {
            queue = q;
            kick.reset();
        }

        @Override
        public void onDetach(QueueContext q) {
            q.queue().flushUsed();
            queue = null;
            kick.reset();
        }

        @Override
        public int doWork() {
            QueueContext q = queue;
            if (q == null || q.queue().isBroken()) {
                return 0;
            }
            DeviceQueue dq = q.queue();
            int n = 0;
            try {
                DescriptorChain c;
                while ((c = dq.pop()) != null) {
                    int s = status;
                    if (s == NO_STATUS) {
                        dq.pushUsed(c.head(), 0);
                    } else {
                        c.scatter(c.writableBytes() - 1, MemorySegment.ofArray(new byte[] {(byte) s}), 0, 1);
                        dq.pushUsed(c.head(), 1);
                    }
                    n++;
                }
            } catch (VirtqueueException e) {
                return n; // the ring is broken: nothing more goes on it (the driver's test then fails on its own)
            }
            if (n > 0) {
                dq.flushUsed();
            }
            return n;
        }

        @Override
        public boolean prepareSleep() {
            return kick.arm(queue);
        }

        @Override
        public void onWake(int events) {
            kick.disarm(queue);
        }
    }
}
