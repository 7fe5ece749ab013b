package io.virtio4j.jcstress;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;
import org.openjdk.jcstress.infra.results.III_Result;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Publication of a used buffer (virtqueue.md 2.10 steps 1-3, 2.8 step 1; packed 3.6 "Complete", 3.5 "Reap").
 * Before the actors run, the driver has added [readable 12 bytes, writable REPLY 8 bytes] and the device has
 * popped it. The device then writes a reply payload into the writable element, pushes the used element (4 bytes
 * written) and publishes {@code used.idx} (packed: writes id and length over the list's first descriptor and stores its flags); the driver polls.
 * Whenever the driver sees the new index (or flags) it must also see the used element (the right head or id,
 * hence the right token, and length 4) and the payload.
 *
 * <p>Outcome {@code (status, length, payload)}: status 0 nothing used yet, 1 the right token, 2 another
 * token, -1 the driver queue raised a ring violation (a leftover used element names head
 * {@value Ring#STALE_HEAD}, which is not in flight); length from {@code lastUsedLength()}; payload the int the
 * driver reads from REPLY ({@value Ring#STALE_INT} if stale). Only {@link #EMPTY} and {@link #SEEN} are
 * correct.
 */
public final class UsedPublish {
    public static final long REQUEST = Ring.buffer(0);
    public static final long REPLY = Ring.buffer(1);
    /**
     * Length of the request element: differs from {@link #WRITTEN}, since a packed device writes the used
     * descriptor over the request's, so a stale length there must not read as the right one.
     */
    public static final int REQUEST_LEN = 12;
    public static final int WRITTEN = 4;
    public static final int PAYLOAD = 4343;
    public static final String EMPTY = "0, 0, 0";
    public static final String SEEN = "1, 4, 4343";
    private static final Object TOKEN = "request";

    private final Ring ring;
    private final int head;
    /** The device's view of the writable element (a slice of guest memory it got from the chain). */
    private final MemorySegment reply;

    public UsedPublish(RingFormat format, Ordering ordering) {
        ring = new Ring(format, ordering, true, AvailPublication.EAGER);
        ring.driver.add(ring.sg.clear().readable(REQUEST, REQUEST_LEN).writable(REPLY, 8), TOKEN);
        DescriptorChain c = ring.device.pop();
        head = c.head();
        reply = c.writable(0);
    }

    /** Device thread: write the reply, push, publish. */
    public void device() {
        reply.set(ValueLayout.JAVA_INT_UNALIGNED, 0, PAYLOAD);
        ring.device.pushUsed(head, WRITTEN);
        ring.device.publishUsed();
    }

    /** Driver thread: poll once and report the token, length and reply payload seen. */
    public void driver(III_Result r) {
        Object token;
        try {
            token = ring.driver.pollUsed();
        } catch (VirtqueueException e) {
            r.r1 = -1;
            return;
        }
        if (token == null) {
            return;
        }
        r.r1 = token == TOKEN ? 1 : 2;
        r.r2 = (int) ring.driver.lastUsedLength();
        r.r3 = ring.getInt(REPLY);
    }
}
