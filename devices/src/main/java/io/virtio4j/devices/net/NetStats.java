package io.virtio4j.devices.net;

/**
 * Counters of one queue pair, written by its worker thread only (once per round, from locals, so the
 * per-frame path does no volatile store) and read by the statistics printer (racy but monotonic reads are fine
 * for a progress line; the final summary is read after the worker stops).
 *
 * <p>"From guest" is the guest's transmit queue (tx), "to guest" its receive queue (rx). The wake-up, EAGAIN
 * and registration counters are those of the tap mode's polling discipline (see {@link TapPolling}).
 */
public final class NetStats {
    /** Frames the guest transmitted (taken from its transmit queue). */
    volatile long fromGuestPackets;
    volatile long fromGuestBytes;
    /** Transmitted frames dropped: malformed, refused by the tap, or no receive buffer to return them in. */
    volatile long fromGuestDrops;
    /** Frames delivered to the guest (put on its receive queue). */
    volatile long toGuestPackets;
    volatile long toGuestBytes;
    /** Frames for the guest dropped: larger than the receive buffers, or carrying offloads the guest did not negotiate. */
    volatile long toGuestDrops;
    /** Kicks read from the transmit queue's eventfd. */
    volatile long kicks;
    /** Kicks read from the receive queue's eventfd (the guest posted buffers while the device waited for them). */
    volatile long rxKicks;
    /** Used-buffer notifications sent on either queue. */
    volatile long notifications;
    /** Returns from epoll_wait with at least one kick or tap event (a control request alone does not count). */
    volatile long wakeups;
    /** Wake-ups after which a full pass found nothing to do. */
    volatile long spuriousWakeups;
    /** Reads of the tap that found no frame (EAGAIN). */
    volatile long rxEagain;
    /** Writes to the tap it could not take (EAGAIN): the frame stays in the ring until EPOLLOUT. */
    volatile long txEagain;
    /** Times a frame from the tap waited because the guest's receive ring was empty. */
    volatile long rxRingEmpty;
    /** Handler runs that stopped at the weight with work possibly left, and went round the loop instead. */
    volatile long weightLimited;
    /** epoll_ctl calls on the tap (ADD, MOD, DEL): the price of changing what is watched. */
    volatile long tapRegistrations;

    public long fromGuestPackets() {
        return fromGuestPackets;
    }

    public long fromGuestBytes() {
        return fromGuestBytes;
    }

    public long fromGuestDrops() {
        return fromGuestDrops;
    }

    public long toGuestPackets() {
        return toGuestPackets;
    }

    public long toGuestBytes() {
        return toGuestBytes;
    }

    public long toGuestDrops() {
        return toGuestDrops;
    }

    public long kicks() {
        return kicks;
    }

    public long notifications() {
        return notifications;
    }

    public long wakeups() {
        return wakeups;
    }

    public long spuriousWakeups() {
        return spuriousWakeups;
    }

    public long rxEagain() {
        return rxEagain;
    }

    public long txEagain() {
        return txEagain;
    }

    public long rxRingEmpty() {
        return rxRingEmpty;
    }

    public long weightLimited() {
        return weightLimited;
    }

    public long tapRegistrations() {
        return tapRegistrations;
    }

    /** A new object holding this plus {@code other} (null counts as zero). */
    public NetStats plus(NetStats other) {
        NetStats s = new NetStats();
        s.add(this);
        if (other != null) {
            s.add(other);
        }
        return s;
    }

    private void add(NetStats x) {
        fromGuestPackets += x.fromGuestPackets;
        fromGuestBytes += x.fromGuestBytes;
        fromGuestDrops += x.fromGuestDrops;
        toGuestPackets += x.toGuestPackets;
        toGuestBytes += x.toGuestBytes;
        toGuestDrops += x.toGuestDrops;
        kicks += x.kicks;
        rxKicks += x.rxKicks;
        notifications += x.notifications;
        wakeups += x.wakeups;
        spuriousWakeups += x.spuriousWakeups;
        rxEagain += x.rxEagain;
        txEagain += x.txEagain;
        rxRingEmpty += x.rxRingEmpty;
        weightLimited += x.weightLimited;
        tapRegistrations += x.tapRegistrations;
    }

    /** Every counter as key=value, for logs and progress lines. */
    @Override
    public String toString() {
        return "from-guest packets=" + fromGuestPackets + " bytes=" + fromGuestBytes + " drops=" + fromGuestDrops
                + " | to-guest packets=" + toGuestPackets + " bytes=" + toGuestBytes + " drops=" + toGuestDrops
                + " | kicks tx=" + kicks + " rx=" + rxKicks + " notifications=" + notifications
                + " | wakeups=" + wakeups + " spurious=" + spuriousWakeups + " eagain rx=" + rxEagain + " tx=" + txEagain
                + " rx-ring-empty=" + rxRingEmpty + " weight-limited=" + weightLimited
                + " tap-registrations=" + tapRegistrations;
    }
}
