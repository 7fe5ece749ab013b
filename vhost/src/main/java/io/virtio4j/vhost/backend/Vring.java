package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.SplitDeviceQueue;
import io.virtio4j.os.EventFd;

import java.util.ArrayList;
import java.util.List;

/** What the front-end has told the back-end about one ring, and whether it is started. Control thread only. */
final class Vring {
    final int index;
    int num;
    boolean addrSet;
    long descAddr;
    long usedAddr;
    long availAddr;
    /** SET_VRING_BASE value: where processing resumes. */
    int base;
    /** Kick eventfd; null with {@link #kickSet} means the front-end asked us to poll (NOFD). */
    EventFd kick;
    boolean kickSet;
    final CallNotifier call = new CallNotifier();
    /** Call and error eventfds replaced while the ring ran: closed once it stops (see CallNotifier). */
    final List<EventFd> retiredCalls = new ArrayList<>();
    EventFd err;
    boolean enabled;
    /** Non-null while started. */
    QueueContext started;
    SplitDeviceQueue queue;

    Vring(int index) {
        this.index = index;
    }

    boolean isStarted() {
        return started != null;
    }

    /** Closes every fd the ring holds and forgets its setup; the ring must be stopped. */
    void clear() {
        closeKick();
        closeCalls();
        if (err != null) {
            err.close();
            err = null;
        }
        num = 0;
        addrSet = false;
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

    void closeCalls() {
        EventFd c = call.target();
        call.target(null);
        if (c != null) {
            c.close();
        }
        for (EventFd r : retiredCalls) {
            r.close();
        }
        retiredCalls.clear();
    }
}
