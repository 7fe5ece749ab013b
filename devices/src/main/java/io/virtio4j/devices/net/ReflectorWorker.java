package io.virtio4j.devices.net;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.os.Epoll;
import io.virtio4j.vhost.backend.QueueContext;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.logging.Logger;

/**
 * The work of one queue pair in the modes without an outside world ({@link NetMode.Reflect}): frames the guest
 * transmits are taken from the transmit queue, copied out of guest memory (the guest may change them under us),
 * counted, and dropped or returned on the receive queue of the same pair, as the {@link NetMode.Reflection} says.
 *
 * <p>Each pass handles at most {@code weight} frames and publishes what it used. Only the transmit queue is
 * waited on: receive buffers are only looked for when a frame is to be returned, so receive kicks are not asked
 * for, and a frame that finds no receive buffer is dropped (counted).
 */
final class ReflectorWorker implements PairWork {
    private static final Logger LOG = Logger.getLogger(ReflectorWorker.class.getName());
    private static final int MAX_FRAME = 65536;

    private final int pair;
    private final NetMode.Reflection reflection;
    private final int weight;
    private final NetStats stats = new NetStats();

    // ---- runner-thread state ----
    private final PairQueues queues = new PairQueues();
    /** A transmitted frame, header first, copied out of guest memory. */
    private MemorySegment frame;

    ReflectorWorker(int pair, NetMode.Reflection reflection, int weight) {
        this.pair = pair;
        this.reflection = reflection;
        this.weight = weight;
    }

    @Override
    public NetStats stats() {
        return stats;
    }

    @Override
    public void onStart(Arena arena, Epoll epoll) {
        frame = arena.allocate(NetFeatures.HDR_LEN + MAX_FRAME, 64);
    }

    /** The receive queue is never waited on: a frame finding no buffer is dropped. */
    @Override
    public void onAttach(QueueContext q) {
        queues.attach(q);
    }

    @Override
    public void onDetach(QueueContext q) {
        flush(q);
        queues.detach(q);
    }

    @Override
    public void onKick(QueueContext q) {
        queues.kicked(q);
    }

    @Override
    public boolean prepareSleep() {
        return queues.txKick.arm(queues.tx);
    }

    @Override
    public void onWake(int events) {
        queues.txKick.disarm(queues.tx);
    }

    @Override
    public void onStop() {
        queues.foldKicks(stats);
    }

    /** One bounded pass over the transmit queue; returns the frames handled. */
    @Override
    public int doWork() {
        queues.foldKicks(stats);
        QueueContext t = queues.tx;
        if (t == null || t.queue().isBroken()) {
            return 0;
        }
        DeviceQueue q = t.queue();
        // Whether frames go back at all, read once per pass (both flags are volatile, written by the control
        // thread on SET_VRING_ENABLE); a pass is bounded by the weight, so a change is seen a pass later at most.
        QueueContext r = queues.rx;
        boolean back = reflection != NetMode.Reflection.DROP && t.enabled() && r != null && r.enabled();
        int n = 0;
        long packets = 0;
        long bytes = 0;
        long drops = 0;
        long delivered = 0;
        long deliveredBytes = 0;
        try {
            DescriptorChain c;
            while (n < weight && (c = q.pop()) != null) {
                n++;
                long total = c.readableBytes();
                long len = total - NetFeatures.HDR_LEN;
                int head = c.head();
                if (len < NetFeatures.ETH_HEADER || len > MAX_FRAME) {
                    drops++;
                } else {
                    // Copy the frame out before using it: the guest may rewrite its buffer at any moment. The
                    // header is only needed when the frame goes back (RxDelivery reads its flags and gso_type), and
                    // copying it apart keeps the frame's copy at the frame's size: 64 bytes stay under the JDK's
                    // threshold for a native memcpy call, 76 at once do not (header and frame in one copy cost 14%
                    // of the receive rate of 64-byte frames from DPDK's virtio-user, measured A/B interleaved).
                    c.gather(NetFeatures.HDR_LEN, frame, NetFeatures.HDR_LEN, len);
                    packets++;
                    bytes += len;
                    if (back) {
                        c.gather(0, frame, 0, NetFeatures.HDR_LEN);
                        if (reflect(r, total)) {
                            delivered++;
                            deliveredBytes += len;
                        } else {
                            drops++;
                        }
                    }
                }
                q.pushUsed(head, 0);
            }
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": transmit queue " + t.index() + " broken: " + e.getMessage());
        }
        if (n > 0) {
            flush(t);
            flush(queues.rx);
            stats.fromGuestPackets += packets;
            stats.fromGuestBytes += bytes;
            stats.fromGuestDrops += drops;
            stats.toGuestPackets += delivered;
            stats.toGuestBytes += deliveredBytes;
        }
        return n;
    }

    /**
     * Puts the frame in {@link #frame} on the receive queue, MACs swapped when asked. Returns false when it was not
     * delivered (no receive ring, not enough buffers, or see {@link RxDelivery}).
     */
    private boolean reflect(QueueContext r, long total) {
        if (r.queue().isBroken()) {
            return false;
        }
        if (reflection == NetMode.Reflection.SWAP_MACS) {
            int d = NetFeatures.HDR_LEN;
            for (int i = 0; i < 6; i++) {
                byte b = frame.get(ValueLayout.JAVA_BYTE, d + i);
                frame.set(ValueLayout.JAVA_BYTE, d + i, frame.get(ValueLayout.JAVA_BYTE, d + 6 + i));
                frame.set(ValueLayout.JAVA_BYTE, d + 6 + i, b);
            }
        }
        try {
            return queues.delivery.deliver(frame, total) == RxDelivery.DELIVERED;
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": receive queue " + r.index() + " broken: " + e.getMessage());
            return false;
        }
    }
}
