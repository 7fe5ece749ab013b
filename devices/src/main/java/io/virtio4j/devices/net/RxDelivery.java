package io.virtio4j.devices.net;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.AvailableChainChangedException;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Puts frames on one guest receive queue, from a staging segment that holds a 12-byte virtio_net_hdr followed by
 * the Ethernet frame (what a tap read returns, what the reflector copies out of the transmit ring). The one way
 * every net worker delivers to the guest; a flyweight made when the receive queue is attached, allocating nothing
 * per frame.
 *
 * <p>The rules, each as Linux vhost-net and DPDK's vhost library do it:
 * <ul>
 * <li><b>Header.</b> This device offers no receive offloads (no GUEST_CSUM, no GUEST_TSO*), so the guest gets an
 *     all-zero header but for num_buffers (DPDK writes the header from the mbuf's offload flags, all zero without
 *     offloads; the spec wants flags zero without GUEST_CSUM and gso_type NONE without GUEST_TSO*). A frame whose
 *     source header asks for an offload the guest could not handle (NEEDS_CSUM: a partial checksum; a gso_type:
 *     an unsegmented frame) is dropped, not passed on with a lie.</li>
 * <li><b>Too small.</b> Without merged buffers a frame must fit the one buffer it gets; when it does not, the
 *     buffer goes back to the ring unused (vhost-net's {@code vhost_discard_vq_desc} when {@code get_rx_bufs}
 *     comes up short; DPDK's {@code reserve_avail_buf} failing) and the frame is dropped. The guest keeps its
 *     buffer for the next frame.</li>
 * <li><b>Merged buffers (VIRTIO_NET_F_MRG_RXBUF).</b> A frame spans as many buffers as it needs and num_buffers
 *     says how many, at most as many as the ring holds (vhost-net's quota is {@code vq->num}, DPDK tries up to the
 *     ring size). When the buffers posted so far are not enough, none is taken ({@link #NO_BUFFERS}: wait for
 *     more). When even a full ring would not hold it, it never will: it is dropped and the buffers go back.</li>
 * </ul>
 */
final class RxDelivery {
    /** The frame is on the ring. */
    static final int DELIVERED = 0;
    /** The guest has not posted enough buffers; nothing was taken and the frame is still in the staging segment. */
    static final int NO_BUFFERS = 1;
    /** The frame cannot be delivered at all (too large for the buffers, offloads, runt); no buffer was taken. */
    static final int DROPPED = 2;

    private static final int HDR_FLAGS = 0;
    private static final int HDR_GSO_TYPE = 1;
    private static final byte VIRTIO_NET_HDR_F_NEEDS_CSUM = 1;
    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final DeviceQueue q;
    private final boolean mergeable;
    /** Where each frame's bytes are marked once in the guest's buffers (migration), or null: not logging. */
    private final DirtyLog log;
    private final GuestMemory memory;
    /** Heads taken for the frame being delivered: a frame spans at most the whole ring. */
    private final int[] heads;

    RxDelivery(DeviceQueue q, boolean mergeable, DirtyLog log, GuestMemory memory) {
        this.q = q;
        this.mergeable = mergeable;
        this.log = log;
        this.memory = memory;
        this.heads = new int[mergeable ? q.size() : 1];
    }

    /**
     * Delivers {@code total} bytes of {@code frame} (header included; the header is rewritten in place). Used
     * elements are pushed but not published: the caller flushes once per pass.
     *
     * @return {@link #DELIVERED}, {@link #NO_BUFFERS} or {@link #DROPPED}
     * @throws io.virtio4j.core.error.VirtqueueException when the guest broke the ring
     */
    int deliver(MemorySegment frame, long total) {
        if (total < NetFeatures.HDR_LEN + NetFeatures.ETH_HEADER
                || frame.get(ValueLayout.JAVA_BYTE, HDR_GSO_TYPE) != 0
                || (frame.get(ValueLayout.JAVA_BYTE, HDR_FLAGS) & VIRTIO_NET_HDR_F_NEEDS_CSUM) != 0) {
            return DROPPED;
        }
        // Twelve zero bytes, without a slice object: num_buffers is written once known.
        frame.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0L);
        frame.set(ValueLayout.JAVA_INT_UNALIGNED, 8, 0);
        return mergeable ? deliverMerged(frame, total) : deliverSingle(frame, total);
    }

    private int deliverSingle(MemorySegment frame, long total) {
        DescriptorChain c = q.pop();
        if (c == null) {
            return NO_BUFFERS;
        }
        if (c.writableBytes() < total) {
            q.unpop(c.head());
            return DROPPED;
        }
        frame.set(LE_SHORT, NetFeatures.HDR_NUM_BUFFERS, (short) 1);
        c.scatter(0, frame, 0, total);
        if (log != null) {
            logged(c, total);
        }
        q.pushUsed(c.head(), total);
        return DELIVERED;
    }

    /**
     * First takes chains until their writable room holds the frame, then gives them all back and, num_buffers now
     * known and written into the staging header, takes the same chains again and fills them. Popping twice is
     * cheaper than remembering each chain's regions: a popped chain is a flyweight the next pop reuses.
     */
    private int deliverMerged(MemorySegment frame, long total) {
        long room = 0;
        int k = 0;
        int outcome = DELIVERED;
        while (room < total) {
            if (k == heads.length) {
                outcome = DROPPED; // the whole ring would not hold it
                break;
            }
            DescriptorChain c = q.pop();
            if (c == null) {
                outcome = NO_BUFFERS;
                break;
            }
            heads[k++] = c.head();
            room += c.writableBytes();
        }
        for (int i = k - 1; i >= 0; i--) {
            q.unpop(heads[i]); // in reverse order of popping, as unpop requires
        }
        if (outcome != DELIVERED) {
            return outcome;
        }
        frame.set(LE_SHORT, NetFeatures.HDR_NUM_BUFFERS, (short) k);
        long copied = 0;
        for (int i = 0; i < k; i++) {
            // The same chains, read again from guest memory: a driver that rewrote them meanwhile broke the ring.
            DescriptorChain c = q.pop();
            if (c == null || c.head() != heads[i]) {
                throw changed(new AvailableChainChangedException("avail.ring (receive chain " + i + " of " + k + ")",
                        c == null ? -1 : c.head(), "was head " + heads[i] + " when the device first read it"));
            }
            long n = c.scatter(0, frame, copied, total - copied);
            copied += n;
            if (log != null) {
                logged(c, n);
            }
            q.pushUsed(c.head(), n);
        }
        if (copied != total) {
            throw changed(new AvailableChainChangedException("desc writable bytes (receive chains " + heads[0] + ".."
                    + heads[k - 1] + ")", copied, "held " + total + " bytes when the device first read them"));
        }
        return DELIVERED;
    }

    /**
     * Marks the {@code n} bytes just copied into {@code c} in the dirty log, before the buffer is pushed. A log
     * without a bit for them (the front-end sized it too small) breaks the queue: thrown, as a violation the queue
     * found is, so the worker stops delivering on it.
     */
    private void logged(DescriptorChain c, long n) {
        try {
            c.markWritten(log, memory, n);
        } catch (DirtyLogOverflowException e) {
            q.fail(e);
            throw e;
        }
    }

    private AvailableChainChangedException changed(AvailableChainChangedException e) {
        q.fail(e); // the queue is broken from here on, as for any violation the queue finds itself
        return e;
    }
}
