package io.virtio4j.vhost.frontend;

import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.vhost.notify.EventFdNotifier;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * One ring of a {@link FrontendSession}: its areas in guest memory, the {@link DriverQueue} over them, and the kick
 * and call eventfds the back-end gets (unless the session runs without eventfds: NOFD, both sides poll). One thread
 * drives it at a time.
 */
public final class DriverRing {
    private static final ValueLayout.OfShort LE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int index;
    private final RingAreas areas;
    private final DriverQueue queue;
    private final EventFdNotifier kick;
    private final EventFdNotifier call;
    private final boolean eventFds;

    DriverRing(int index, RingAreas areas, DriverQueue queue, EventFdNotifier kick, EventFdNotifier call,
               boolean eventFds) {
        this.index = index;
        this.areas = areas;
        this.queue = queue;
        this.kick = kick;
        this.call = call;
        this.eventFds = eventFds;
    }

    public int index() {
        return index;
    }

    public RingAreas areas() {
        return areas;
    }

    public DriverQueue queue() {
        return queue;
    }

    /** The eventfd notifier the back-end got with SET_VRING_KICK (created even when NOFD was sent). */
    public EventFdNotifier kick() {
        return kick;
    }

    /** The eventfd notifier the back-end got with SET_VRING_CALL (created even when NOFD was sent). */
    public EventFdNotifier call() {
        return call;
    }

    public boolean eventFds() {
        return eventFds;
    }

    /**
     * Waits for used buffers, at most {@code timeoutNanos}: arms the used-buffer notification, re-checks the ring
     * (a buffer used meanwhile returns at once, so no wake-up is lost), sleeps on the call eventfd, disarms.
     * Without eventfds it polls the ring (yielding between looks). Allocates nothing.
     *
     * @return true when there may be used buffers to reap
     */
    public boolean await(long timeoutNanos) throws InterruptedException {
        if (!eventFds) {
            long deadline = System.nanoTime() + timeoutNanos;
            while (!queue.hasUsed()) {
                if (System.nanoTime() - deadline >= 0) {
                    return false;
                }
                Thread.yield();
            }
            return true;
        }
        if (queue.enableCallbacksOrFindPending()) {
            queue.disableCallbacks();
            return true;
        }
        boolean signalled = call.await(timeoutNanos);
        queue.disableCallbacks();
        return signalled;
    }

    /**
     * The index in a split ring's used ring: how many buffers the device has returned, the base a ring resumes
     * from when its back-end went away without answering GET_VRING_BASE (QEMU does the same: buffers made
     * available after it are offered again to the new back-end). Only while no back-end uses the ring.
     *
     * @throws IllegalStateException for a packed ring: its device position cannot be read back from the ring
     */
    long usedIndex() {
        if (!(areas instanceof SplitRingAreas s)) {
            throw new IllegalStateException("ring " + index + " is packed: its position after a lost back-end is "
                    + "not recoverable from the ring; reconnection resumes split rings only");
        }
        return Short.toUnsignedInt(s.usedRing().get(LE_SHORT, SplitLayout.USED_IDX));
    }

    void closeFds() {
        try {
            kick.close();
        } finally {
            call.close();
        }
    }
}
