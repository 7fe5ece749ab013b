package io.virtio4j.core.driver;

import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.stats.QueueCounters;

/** Driver side of a packed virtqueue. SCAFFOLD: being written. */
public final class PackedDriverQueue implements DriverQueue {
    public PackedDriverQueue(PackedRingAreas areas, DriverOptions options, Notifier kickNotifier) {
        throw new UnsupportedOperationException("packed driver queue: being written");
    }
    @Override public int size() { throw new UnsupportedOperationException(); }
    @Override public int freeDescriptors() { throw new UnsupportedOperationException(); }
    @Override public int inFlight() { throw new UnsupportedOperationException(); }
    @Override public boolean hasRoomFor(ScatterGather sg) { throw new UnsupportedOperationException(); }
    @Override public QueueCounters counters() { throw new UnsupportedOperationException(); }
    @Override public boolean isBroken() { throw new UnsupportedOperationException(); }
    @Override public void add(ScatterGather sg, Object token) { throw new UnsupportedOperationException(); }
    @Override public void publish() { throw new UnsupportedOperationException(); }
    @Override public boolean kickPrepare() { throw new UnsupportedOperationException(); }
    @Override public void notifyDevice() { throw new UnsupportedOperationException(); }
    @Override public boolean kick() { throw new UnsupportedOperationException(); }
    @Override public boolean hasUsed() { throw new UnsupportedOperationException(); }
    @Override public Object pollUsed() { throw new UnsupportedOperationException(); }
    @Override public long lastUsedLength() { throw new UnsupportedOperationException(); }
    @Override public void disableCallbacks() { throw new UnsupportedOperationException(); }
    @Override public boolean enableCallbacksOrFindPending() { throw new UnsupportedOperationException(); }
    @Override public boolean enableCallbacksDelayedOrFindPending() { throw new UnsupportedOperationException(); }
    @Override public Object detachUnused() { throw new UnsupportedOperationException(); }
    @Override public void reset() { throw new UnsupportedOperationException(); }
}
