package io.virtio4j.devices.net;

/**
 * Counters of one queue pair, written by its worker thread only and read by the statistics printer
 * (racy but monotonic reads are fine for a progress line; the final summary is read after the worker stops).
 */
public final class NetStats {
    /** Frames the guest transmitted (taken from its transmit queue). */
    volatile long fromGuestPackets;
    volatile long fromGuestBytes;
    /** Transmitted frames dropped: malformed, or no receive buffer to return them in. */
    volatile long fromGuestDrops;
    /** Frames delivered to the guest (put on its receive queue). */
    volatile long toGuestPackets;
    volatile long toGuestBytes;
    /** Kicks read from the transmit queue's eventfd. */
    volatile long kicks;
    /** Used-buffer notifications sent on either queue. */
    volatile long notifications;

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

    public long kicks() {
        return kicks;
    }

    public long notifications() {
        return notifications;
    }
}
