package io.virtio4j.devices.net;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.worker.KickSwitch;
import io.virtio4j.vhost.backend.QueueContext;

/**
 * The bookkeeping every {@link PairWork} shares, on the runner's thread only: which of the pair's two queues are
 * attached, the receive queue's {@link RxDelivery}, the two kick switches, and the kicks read since they were last
 * folded into the pair's {@link NetStats} (counted in plain fields, so reading a kick does no shared store).
 */
final class PairQueues {
    /** The receive queue, or null while it is not attached. */
    QueueContext rx;
    /** The transmit queue, or null while it is not attached. */
    QueueContext tx;
    /** Delivery to {@link #rx}; null while it is not attached. */
    RxDelivery delivery;
    final KickSwitch txKick = new KickSwitch();
    final KickSwitch rxKick = new KickSwitch();
    private long txKicks;
    private long rxKicks;

    /**
     * Takes {@code q}, just attached; returns whether it is the receive queue. The receive queue's delivery follows
     * the features that ring was started with (merged buffers or not): a front-end may renegotiate them while the
     * rings are stopped, and the pair's runner outlives that. The kicks of both rings are switched off (with
     * EVENT_IDX this leaves avail_event behind): a net device looks for receive buffers when it has a frame, and
     * asks for a kick only while a frame waits for them; it looks at the transmit ring on every pass, and asks for
     * its kicks only before it sleeps ({@link KickSwitch#arm}, which re-checks the ring), so a polling thread, which
     * never sleeps, never has the driver kick: a started ring's flags ask for kicks, and a driver that sees them
     * makes a system call (an eventfd write) per burst, which DPDK's virtio-user paid on every burst of 32 frames.
     * A kick that came before the ring started is not lost: the next pass looks at the ring anyway.
     */
    boolean attach(QueueContext q) {
        if (q.index() % 2 == 0) { // 2p receives, 2p + 1 transmits
            rx = q;
            // the test-only switch (see NetDevice.DEBUG_SKIP_RX_DATA_LOG) is read here, off the hot path
            delivery = new RxDelivery(q.queue(), VirtioFeatures.has(q.features(), NetFeatures.MRG_RXBUF),
                    Boolean.getBoolean(NetDevice.DEBUG_SKIP_RX_DATA_LOG) ? null : q.dirtyLog(), q.memory());
            rxKick.attached(q);
            return true;
        }
        tx = q;
        txKick.attached(q);
        return false;
    }

    /** Lets {@code q} go (the caller published what it pushed); returns whether it was the receive queue. */
    boolean detach(QueueContext q) {
        if (q == rx) {
            rx = null;
            delivery = null;
            rxKick.reset();
            return true;
        }
        if (q == tx) {
            tx = null;
            txKick.reset();
        }
        return false;
    }

    /** The guest kicked {@code q} (its eventfd was read). */
    void kicked(QueueContext q) {
        if (q == tx) {
            txKicks++;
        } else if (q == rx) {
            rxKicks++;
        }
    }

    /** Adds the kicks counted since the last fold to {@code stats}. */
    void foldKicks(NetStats stats) {
        if (txKicks != 0) {
            stats.add(NetStats.TX, NetStats.KICKS, txKicks);
            txKicks = 0;
        }
        if (rxKicks != 0) {
            stats.add(NetStats.RX, NetStats.KICKS, rxKicks);
            rxKicks = 0;
        }
    }
}
