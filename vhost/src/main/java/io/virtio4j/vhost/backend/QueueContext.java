package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.os.EventFd;

/**
 * A started ring as a device sees it: the device-side queue over the front-end's memory, the kick eventfd to
 * wait on (null when the front-end asked the back-end to poll), whether the ring is enabled, and the features it
 * was started with.
 */
public final class QueueContext {
    private final int index;
    private final DeviceQueue queue;
    private final GuestMemory memory;
    private final EventFd kick;
    private final long features;
    private volatile boolean enabled;
    /** The ring's SET_VRING_ERR eventfd; replaced by the control thread, signalled by the device's threads. */
    private final EventFdSlot err;
    /** Where the device marks the guest memory it writes, or null: not logging. */
    private final DirtyLog dirtyLog;

    QueueContext(int index, DeviceQueue queue, GuestMemory memory, EventFd kick, boolean enabled, long features,
                 EventFdSlot err) {
        this(index, queue, memory, kick, enabled, features, err, null);
    }

    QueueContext(int index, DeviceQueue queue, GuestMemory memory, EventFd kick, boolean enabled, long features,
                 EventFdSlot err, DirtyLog dirtyLog) {
        this.dirtyLog = dirtyLog;
        this.index = index;
        this.queue = queue;
        this.memory = memory;
        this.kick = kick;
        this.enabled = enabled;
        this.features = features;
        this.err = err;
    }

    public int index() {
        return index;
    }

    public DeviceQueue queue() {
        return queue;
    }

    public GuestMemory memory() {
        return memory;
    }

    /**
     * The virtio features negotiated when the ring started (as {@link VirtioDevice#featuresNegotiated} got them):
     * they hold for this ring's life, since SET_FEATURES cannot change them while it runs. A device decides its
     * per-ring rules (e.g. net's merged receive buffers) from these, not from the latest negotiation, which a
     * front-end may change while the ring is stopped.
     */
    public long features() {
        return features;
    }

    /**
     * The dirty log (vhost-user migration: VHOST_F_LOG_ALL negotiated and a log given with SET_LOG_BASE) in which the
     * device marks every byte it writes into guest memory through this ring's buffers, after the bytes are there
     * and before the buffer is pushed used ({@link DirtyLog#markHost}); null when not logging. It holds for the
     * ring's life: logging switched on or off restarts the ring. The queue marks its own ring writes itself.
     */
    public DirtyLog dirtyLog() {
        return dirtyLog;
    }

    /** Kick eventfd, or null when the ring is to be polled. */
    public EventFd kick() {
        return kick;
    }

    /** A started but disabled ring is processed without side effects (net: no rx, tx drained and dropped). */
    public boolean enabled() {
        return enabled;
    }

    void enabled(boolean on) {
        enabled = on;
    }

    /**
     * Tells the front-end that this ring failed, through the error eventfd it gave with SET_VRING_ERR; does
     * nothing when it gave none. For a ring that is no longer served: its queue thread died, or the driver broke
     * the queue (devices' QueueRunner calls it for both).
     */
    public void signalError() {
        err.signal();
    }
}
