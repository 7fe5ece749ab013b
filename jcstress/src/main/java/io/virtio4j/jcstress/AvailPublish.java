package io.virtio4j.jcstress;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;
import org.openjdk.jcstress.infra.results.IIIII_Result;

import java.lang.foreign.ValueLayout;

/**
 * Publication of an available buffer (virtqueue.md 2.7 steps 1-5, 2.9 steps 1-5): the driver writes a request
 * payload into a device-readable buffer, adds the chain [readable REQUEST (4 bytes), writable REPLY (8 bytes)]
 * and publishes {@code avail.idx}; the device pops. Whenever the device sees the new index it must also see the
 * avail entry, both descriptors and the payload the driver wrote before publishing.
 *
 * <p>Packed (virtqueue.md 3.4, 3.5 "Add"): the driver writes both descriptors and publishes the list by storing
 * the first one's flags last; the device, once it sees those flags, must see the second descriptor, the buffer
 * id (0, the first id handed out; a leftover names {@value Ring#STALE_HEAD}) and the payload.
 *
 * <p>Outcome {@code (status, head, readable length, writable length, payload)}:
 * <ul>
 *   <li>status: 0 ring empty, 1 popped a chain, -1 the device queue raised a ring violation;</li>
 *   <li>head: the head index (split) or buffer id (packed) popped (0; a leftover names
 *       {@value Ring#STALE_HEAD});</li>
 *   <li>readable / writable length: the element's length if the element sits at the address the driver gave,
 *       else -1 (a leftover descriptor reads as one element of length 1 at buffer {@value Ring#STALE_BUFFER});</li>
 *   <li>payload: the int the device reads from the readable element ({@value Ring#STALE_INT} if stale).</li>
 * </ul>
 * The only correct outcomes are {@link #EMPTY} and {@link #SEEN}.
 */
public final class AvailPublish {
    public static final long REQUEST = Ring.buffer(0);
    public static final long REPLY = Ring.buffer(1);
    public static final int REQUEST_LEN = 4;
    public static final int REPLY_LEN = 8;
    public static final int PAYLOAD = 4242;
    public static final String EMPTY = "0, 0, 0, 0, 0";
    public static final String SEEN = "1, 0, 4, 8, 4242";
    private static final Object TOKEN = "request";

    private final Ring ring;
    private final boolean lazy;

    /**
     * @param publication {@link AvailPublication#EAGER}: {@code add} publishes; {@link AvailPublication#LAZY}:
     *                    {@code add} then {@code kickPrepare()} publishes
     */
    public AvailPublish(RingFormat format, Ordering ordering, AvailPublication publication) {
        ring = new Ring(format, ordering, true, publication);
        lazy = publication == AvailPublication.LAZY;
    }

    /** Driver thread: fill the request, add the chain, publish. */
    public void driver() {
        ring.putInt(REQUEST, PAYLOAD);
        ring.driver.add(ring.sg.clear().readable(REQUEST, REQUEST_LEN).writable(REPLY, REPLY_LEN), TOKEN);
        if (lazy) {
            ring.driver.kickPrepare();
        }
    }

    /** Device thread: pop and report what the chain looked like. */
    public void device(IIIII_Result r) {
        DescriptorChain c;
        try {
            c = ring.device.pop();
        } catch (VirtqueueException e) {
            r.r1 = -1;
            return;
        }
        if (c == null) {
            return;
        }
        r.r1 = 1;
        r.r2 = c.head();
        r.r3 = element(c, 0, false, REQUEST);
        r.r4 = element(c, c.readableCount(), true, REPLY);
        r.r5 = c.readableCount() > 0 && c.length(0) >= 4 ? c.readable(0).get(ValueLayout.JAVA_INT_UNALIGNED, 0)
                : -1;
    }

    private static int element(DescriptorChain c, int i, boolean writable, long expectedAddr) {
        if (i >= c.count() || c.isWritable(i) != writable || c.offset(i) != expectedAddr) {
            return -1;
        }
        return (int) c.length(i);
    }
}
