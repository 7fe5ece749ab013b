package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.os.EventFd;

import java.util.function.Supplier;

/** What the front-end has told the back-end about one ring, and whether it is started. Control thread only. */
final class Vring {
    final int index;
    int num;
    boolean addrSet;
    long descAddr;
    long usedAddr;
    long availAddr;
    /** SET_VRING_ADDR's flags (VHOST_VRING_F_LOG or 0) and the used ring's guest-physical address for the log. */
    long addrFlags;
    long logAddr;
    /** SET_VRING_BASE value: where processing resumes. */
    long base;
    /** Kick eventfd; null with {@link #kickSet} means the front-end asked us to poll (NOFD). */
    EventFd kick;
    boolean kickSet;
    /** Call eventfd (none: the front-end polls), signalled through {@link #call}. */
    final EventFdSlot callFd = new EventFdSlot();
    final CallNotifier call = new CallNotifier(callFd);
    /** SET_VRING_ERR's eventfd, or none. */
    final EventFdSlot err = new EventFdSlot();
    boolean enabled;
    /** Non-null while started. */
    QueueContext started;
    DeviceQueue queue;
    /** The inflight area the started ring records in (it holds a slice of it), or null: untracked. */
    InflightArea inflight;
    /** The dirty log the started ring marks in, or null: not logging. */
    DirtyLogArea logging;

    Vring(int index) {
        this.index = index;
    }

    boolean isStarted() {
        return started != null;
    }

    /**
     * Closes the kick, empties the call and error slots (their numbers stay, on {@code sink}: see EventFdSlot) and
     * forgets the ring's setup; the ring must be stopped.
     */
    void clear(Supplier<EventFd> sink) {
        closeKick();
        callFd.empty(sink);
        err.empty(sink);
        num = 0;
        addrSet = false;
        addrFlags = 0;
        logAddr = 0;
        base = 0;
        enabled = false;
        queue = null;
    }

    void closeKick() {
        if (kick != null) {
            kick.close();
            kick = null;
        }
        kickSet = false;
    }
}
