package io.virtio4j.devices.net;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.SplitDeviceQueue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Puts frames on a guest receive queue, from a staging segment that holds the 12-byte virtio_net_hdr followed by
 * the Ethernet frame (what a tap read returns). With merged receive buffers a frame is spread over as many
 * buffers as it needs and num_buffers says how many; without, it must fit one buffer. A flyweight: one per
 * worker, no allocation per frame.
 *
 * <p>The header passes through from the tap, except what the guest did not negotiate: this device offers no
 * checksum or segmentation offload, so the flags byte is cleared (the spec wants it zero without
 * VIRTIO_NET_F_GUEST_CSUM) and a frame the kernel handed over unsegmented or with a partial checksum is dropped.
 * The kernel does not produce those unless offloads are switched on for the tap (TUNSETOFFLOAD), which we never
 * do.
 */
final class RxDelivery {
    /** The frame is on the ring. */
    static final int DELIVERED = 0;
    /** The guest has not posted enough buffers; nothing was taken and the frame is still in the staging segment. */
    static final int NO_BUFFERS = 1;
    /** The frame cannot be delivered at all (too large for the buffers, offloads, runt); no buffer was taken. */
    static final int DROPPED = 2;

    /** Most buffers one frame may span (Linux vhost allows UIO_MAXIOV descriptors; 64 KiB in 1 KiB buffers needs 65). */
    static final int MAX_MERGED = 128;
    private static final int HDR_FLAGS = 0;
    private static final int HDR_GSO_TYPE = 1;
    private static final byte VIRTIO_NET_HDR_F_NEEDS_CSUM = 1;
    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final boolean mergeable;
    private final int[] heads = new int[MAX_MERGED];

    RxDelivery(boolean mergeable) {
        this.mergeable = mergeable;
    }

    /**
     * Delivers {@code total} bytes of {@code frame} (header included) on {@code q}. Used elements are pushed but
     * not published: the caller flushes once per round.
     *
     * @return {@link #DELIVERED}, {@link #NO_BUFFERS} or {@link #DROPPED}
     */
    int deliver(SplitDeviceQueue q, MemorySegment frame, long total) {
        if (total < NetFeatures.HDR_LEN + NetFeatures.ETH_HEADER
                || frame.get(ValueLayout.JAVA_BYTE, HDR_GSO_TYPE) != 0
                || (frame.get(ValueLayout.JAVA_BYTE, HDR_FLAGS) & VIRTIO_NET_HDR_F_NEEDS_CSUM) != 0) {
            return DROPPED;
        }
        frame.set(ValueLayout.JAVA_BYTE, HDR_FLAGS, (byte) 0); // DATA_VALID needs GUEST_CSUM: not offered
        return mergeable ? deliverMerged(q, frame, total) : deliverSingle(q, frame, total);
    }

    private static int deliverSingle(SplitDeviceQueue q, MemorySegment frame, long total) {
        DescriptorChain c = q.pop();
        if (c == null) {
            return NO_BUFFERS;
        }
        if (c.writableBytes() < total) {
            // As vhost-net does with a frame that does not fit (it would be truncated): the buffer goes back to
            // the ring unused and the frame is dropped.
            q.unpop(c.head());
            return DROPPED;
        }
        frame.set(LE_SHORT, NetFeatures.HDR_NUM_BUFFERS, (short) 1);
        c.scatter(0, frame, 0, total);
        q.pushUsed(c.head(), total);
        return DELIVERED;
    }

    /**
     * First takes chains until their writable room holds the frame (giving them all back when the guest has not
     * posted enough), then, num_buffers now known and written into the staging header, takes the same chains again
     * and fills them. Popping twice is cheaper than remembering each chain's regions: a popped chain is a
     * flyweight the next pop reuses.
     */
    private int deliverMerged(SplitDeviceQueue q, MemorySegment frame, long total) {
        long room = 0;
        int k = 0;
        int outcome = DELIVERED;
        while (room < total) {
            if (k == heads.length) {
                outcome = DROPPED;
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
            DescriptorChain c = q.pop();
            long n = c.scatter(0, frame, copied, total - copied);
            copied += n;
            q.pushUsed(c.head(), n);
        }
        return DELIVERED;
    }
}
