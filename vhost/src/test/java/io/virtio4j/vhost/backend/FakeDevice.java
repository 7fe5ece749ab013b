package io.virtio4j.vhost.backend;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.os.Epoll;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

/**
 * A device that processes nothing: it offers VERSION_1, EVENT_IDX and RING_PACKED, MQ and CONFIG, has {@code queues} queues and
 * records calls. Like a real device it watches a started ring's kick in an epoll set (registered and let go at
 * once), so a kick epoll cannot watch fails the start as it would in a real one. {@link #failStops} makes
 * {@link #stopQueue} throw, as a device with a bug would; {@link #deferRetire} holds back unmapping
 * ({@link RecordingDevice}).
 */
final class FakeDevice extends RecordingDevice {
    static final long FEATURES = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
            | VirtioFeatures.bit(VirtioFeatures.RING_PACKED);
    static final long PROTOCOL_FEATURES = ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.CONFIG);

    private final int queues;
    volatile boolean failStops;

    FakeDevice(int queues) {
        this.queues = queues;
    }

    @Override
    public long features() {
        return FEATURES;
    }

    @Override
    public long protocolFeatures() {
        return PROTOCOL_FEATURES;
    }

    @Override
    public int maxQueues() {
        return queues;
    }

    @Override
    public byte[] config() {
        return new byte[] {1, 2, 3, 4, 5, 6, 7, 8};
    }

    @Override
    public void startQueue(int index, QueueContext queue) {
        if (queue.kick() != null) {
            try (Epoll watch = Epoll.create(1)) {
                watch.add(queue.kick().fileDescriptor(), Epoll.EPOLLIN, index);
            }
        }
        super.startQueue(index, queue);
    }

    @Override
    public void stopQueue(int index) {
        super.stopQueue(index);
        if (failStops) {
            throw new IllegalStateException("queue " + index + " cannot be stopped (a device bug, as the test wants)");
        }
    }

    @Override
    public void reset() {
        calls.add("reset");
    }
}
