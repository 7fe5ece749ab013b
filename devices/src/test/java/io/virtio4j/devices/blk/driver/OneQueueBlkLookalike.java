package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.devices.worker.KickSwitch;
import io.virtio4j.devices.worker.OneRunner;
import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

/**
 * A one-queue device a blk driver takes for virtio-blk (MQ and CONFIG protocol features, one queue), served by one
 * runner of an {@link Answering} worker, a new one per connection, that a subclass says how to answer with: for tests of how a driver takes
 * what the real {@code BlkDevice} never does.
 */
abstract class OneQueueBlkLookalike implements VirtioDevice {
    private final OneRunner runner;

    /** {@code name}: the runner's thread. */
    OneQueueBlkLookalike(String name) {
        this.runner = new OneRunner(name, this::newWorker);
    }

    /** The work of a connection (its first started queue). */
    abstract Answering newWorker();

    @Override
    public long protocolFeatures() {
        return ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.CONFIG);
    }

    @Override
    public int maxQueues() {
        return 1;
    }

    @Override
    public void startQueue(int index, QueueContext queue) {
        runner.attach(queue);
    }

    @Override
    public void stopQueue(int index) {
        runner.detach(index);
    }

    @Override
    public void reset() {
        runner.close();
    }

    /** Takes the requests on the queue while {@link #more()} and answers each as {@link #answer} says. */
    abstract static class Answering implements QueueWorker {
        private final KickSwitch kick = new KickSwitch();
        private QueueContext queue;

        /** Whether to take another request now (pass after pass). */
        boolean more() {
            return true;
        }

        /** Request {@code c} taken: push it used, or not. The chain is reused by the next pop. */
        abstract void answer(DeviceQueue dq, DescriptorChain c);

        @Override
        public void onAttach(QueueContext q) {
            queue = q;
            kick.attached(q);
        }

        @Override
        public void onDetach(QueueContext q) {
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
                while (more() && (c = dq.pop()) != null) {
                    n++;
                    answer(dq, c);
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
