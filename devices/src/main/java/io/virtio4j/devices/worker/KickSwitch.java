package io.virtio4j.devices.worker;

import io.virtio4j.vhost.backend.QueueContext;

/**
 * Whether the device has asked the driver of one queue to kick: asked for just before the thread sleeps, taken
 * back when it wakes (while working the device looks at the ring itself). One per waited-on queue, used on the
 * runner's thread from {@link QueueWorker#prepareSleep()} and {@link QueueWorker#onWake(int)}.
 */
public final class KickSwitch {
    private boolean on;

    /**
     * Asks the driver to kick {@code q}, unless already asked (or the queue is gone or broken), and re-checks the
     * ring (see {@link io.virtio4j.core.device.DeviceQueue#enableKicksOrFindPending()}).
     *
     * @return false when buffers arrived meanwhile: do not sleep, serve them
     */
    public boolean arm(QueueContext q) {
        if (on || q == null || q.queue().isBroken()) {
            return true;
        }
        if (q.queue().enableKicksOrFindPending()) {
            return false;
        }
        on = true;
        return true;
    }

    /** Takes the request back (a hint to the driver: it may still kick). */
    public void disarm(QueueContext q) {
        if (on && q != null && !q.queue().isBroken()) {
            q.queue().disableKicks();
        }
        on = false;
    }

    /**
     * Takes a ring just attached: its kicks are switched off, and asked for only before the thread sleeps
     * ({@link #arm}, which re-checks the ring). A started ring's flags ask for kicks, and a polling thread never
     * sleeps, so it would never take that back: a driver without EVENT_IDX then makes a system call (an eventfd
     * write) per burst, as DPDK's virtio-user did on every burst. A kick that came before the ring was attached is
     * not lost: the next pass looks at the ring anyway.
     */
    public void attached(QueueContext q) {
        on = false;
        if (!q.queue().isBroken()) {
            q.queue().disableKicks();
        }
    }

    /** Forgets the request: the queue was detached. */
    public void reset() {
        on = false;
    }
}
