package io.virtio4j.jcstress;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;

/**
 * The lost-kick race (virtqueue.md 2.11): a Dekker pair between the driver's kick decision and the device's
 * re-enabling of kicks before it sleeps.
 *
 * <p>State before the actors run, reached through the real code paths: one buffer X went round the ring
 * (driver add + kickPrepare, device pop, device {@code disableKicks()}, device push + publish, driver poll).
 * So {@code avail.idx} = 1, the device's {@code last_avail_idx} = 1, the ring is empty and kicks are
 * disabled: without EVENT_IDX {@code used.flags} = NO_NOTIFY; with EVENT_IDX {@code avail_event} = 0 was left
 * behind (the first add after it would not ask for a kick).
 *
 * <ul>
 *   <li>Driver: add buffer Y, {@code kickPrepare()} (publish avail.idx = 2; full fence; read avail_event or
 *       used.flags). Records 1 when it would kick.</li>
 *   <li>Device: {@code enableKicksOrFindPending()} (write avail_event = 1 or clear NO_NOTIFY; full fence; re-read
 *       avail.idx). Records 1 when it sees the buffer (will pop instead of sleeping).</li>
 * </ul>
 * <p>Packed (virtqueue.md 3.5 step 6, 3.6 "Request kicks") is the same pair over other fields: the driver
 * publishes Y by storing its descriptor's flags and reads the device event suppression structure; the device
 * disabled kicks with flags DISABLE and re-enables them with ENABLE (or DESC at its next slot, with EVENT_IDX)
 * before re-reading that slot's flags.
 *
 * <p>Outcome {@code (kick, sees)}. (0, 0) is the lost kick: the driver skips the kick and the device goes to
 * sleep with Y available. Each of (1, 0), (0, 1), (1, 1) is correct.
 */
public final class KickRace {
    public static final String LOST_KICK = "0, 0";
    private static final Object X = "x";
    private static final Object Y = "y";

    private final Ring ring;

    /** The negative-control variant: same ring code, built only where the fence is removed. */
    public KickRace(NegativeControl.Checked fenceRemoved, RingFormat format, Ordering ordering, boolean eventIdx) {
        this(format, ordering, eventIdx);
    }

    public KickRace(RingFormat format, Ordering ordering, boolean eventIdx) {
        ring = new Ring(format, ordering, eventIdx, AvailPublication.EAGER);
        ring.driver.add(ring.sg.clear().readable(Ring.buffer(0), 4), X);
        ring.driver.kickPrepare();
        int head = ring.device.pop().head();
        ring.device.disableKicks();
        ring.device.pushUsed(head, 0);
        ring.device.publishUsed();
        if (ring.driver.pollUsed() != X) {
            throw new IllegalStateException("set-up round trip failed");
        }
    }

    /** Driver thread: add Y and decide the kick. Returns 1 when it would kick. */
    public int driver() {
        ring.driver.add(ring.sg.clear().readable(Ring.buffer(1), 4), Y);
        return ring.driver.kickPrepare() ? 1 : 0;
    }

    /** Device thread: re-enable kicks before sleeping. Returns 1 when it sees Y (must not sleep). */
    public int device() {
        return ring.device.enableKicksOrFindPending() ? 1 : 0;
    }
}
