package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.SplitDeviceQueue;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.os.EventFd;

/**
 * A started ring as a device sees it: the device-side queue over the front-end's memory, the kick eventfd to
 * wait on (null when the front-end asked the back-end to poll), and whether the ring is enabled.
 */
public final class QueueContext {
    private final int index;
    private final SplitDeviceQueue queue;
    private final GuestMemory memory;
    private final EventFd kick;
    private volatile boolean enabled;

    QueueContext(int index, SplitDeviceQueue queue, GuestMemory memory, EventFd kick, boolean enabled) {
        this.index = index;
        this.queue = queue;
        this.memory = memory;
        this.kick = kick;
        this.enabled = enabled;
    }

    public int index() {
        return index;
    }

    public SplitDeviceQueue queue() {
        return queue;
    }

    public GuestMemory memory() {
        return memory;
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
}
