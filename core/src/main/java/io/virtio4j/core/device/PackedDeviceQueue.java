package io.virtio4j.core.device;

import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.stats.QueueCounters;

/** Device side of a packed virtqueue. SCAFFOLD: being written. */
public final class PackedDeviceQueue implements DeviceQueue {
    public PackedDeviceQueue(PackedRingAreas areas, GuestMemory memory, DeviceOptions options, Notifier callNotifier) {
        throw new UnsupportedOperationException("packed device queue: being written");
    }
    @Override public int size() { throw new UnsupportedOperationException(); }
    @Override public QueueState state() { throw new UnsupportedOperationException(); }
    @Override public void restart(QueueState state) { throw new UnsupportedOperationException(); }
    @Override public QueueCounters counters() { throw new UnsupportedOperationException(); }
    @Override public boolean isBroken() { throw new UnsupportedOperationException(); }
    @Override public RingViolationException violation() { throw new UnsupportedOperationException(); }
    @Override public void fail(RingViolationException cause) { throw new UnsupportedOperationException(); }
    @Override public DescriptorChain pop() { throw new UnsupportedOperationException(); }
    @Override public void unpop(int id) { throw new UnsupportedOperationException(); }
    @Override public void pushUsed(int id, long writtenBytes) { throw new UnsupportedOperationException(); }
    @Override public void publishUsed() { throw new UnsupportedOperationException(); }
    @Override public boolean needNotify() { throw new UnsupportedOperationException(); }
    @Override public boolean flushUsed() { throw new UnsupportedOperationException(); }
    @Override public void disableKicks() { throw new UnsupportedOperationException(); }
    @Override public boolean enableKicksOrFindPending() { throw new UnsupportedOperationException(); }
}
