package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.vhost.backend.VirtioDevice;

/**
 * A device that looks like a one-pair virtio-net device to a driver (features, protocol features, queue count and
 * config space of a real {@link NetDevice}) and leaves starting and stopping queues to the test: for tests of
 * what a device does with its queues (a worker that dies, a runner that does not answer) rather than of net.
 */
public abstract class OnePairNetLookalike implements VirtioDevice {
    /** Only for its feature bits and config space: it starts no thread until a queue is started on it. */
    private final NetDevice model = new NetDevice(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY));

    @Override
    public long features() {
        return model.features();
    }

    @Override
    public int maxQueues() {
        return 2;
    }

    @Override
    public long protocolFeatures() {
        return model.protocolFeatures();
    }

    @Override
    public int reportedQueueCount() {
        return model.reportedQueueCount();
    }

    @Override
    public byte[] config() {
        return model.config();
    }
}
