package io.virtio4j.jcstress;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;

/**
 * The lost used-buffer notification (virtqueue.md 2.8 step 2, 2.10 steps 3-5, 2.11 second table): a Dekker
 * pair between the device's notify decision and the driver's re-enabling of callbacks before it sleeps.
 *
 * <p>State before the actors run, reached through the real code paths:
 * <ol>
 *   <li>Buffer X goes round: driver add, device pop, push, publish ({@code used.idx} = 1) and
 *       {@code needNotify()}. With EVENT_IDX that first decision after start is always "notify"; making it
 *       here leaves the device with a valid last-signalled index (1), so the actor's decision below really
 *       depends on {@code used_event}.</li>
 *   <li>The driver {@code disableCallbacks()} (EVENT_IDX: {@code used_event} = 65535, as far behind as 16 bits
 *       allow; else {@code avail.flags} = NO_INTERRUPT) and reaps X: {@code last_used} = 1, nothing to reap.</li>
 *   <li>The driver adds buffer Y, the device pops it: one buffer outstanding, callbacks disabled.</li>
 * </ol>
 * <ul>
 *   <li>Device: push Y, {@code publishUsed()} ({@code used.idx} = 2), {@code needNotify()} (full fence; read
 *       used_event or avail.flags). Records 1 when it would notify.</li>
 *   <li>Driver: {@code enableCallbacksOrFindPending()} (write used_event = 1 or clear NO_INTERRUPT; full fence;
 *       re-read used.idx). Records 1 when it returns false: nothing pending, safe to sleep.</li>
 * </ul>
 * <p>Packed (virtqueue.md 3.5 "Reap" steps 5-6, 3.6 "Notify the driver") is the same pair over other fields:
 * the device publishes Y's used descriptor by storing its flags and reads the driver event suppression structure;
 * the driver disabled callbacks with flags DISABLE and re-enables them with ENABLE (or DESC at its next slot,
 * with EVENT_IDX) before re-reading that slot's flags.
 *
 * <p>Outcome {@code (notify, sleeps)}. (0, 1) is the lost notification: the device does not notify and the driver
 * sleeps with Y used. Each of (1, 1), (1, 0), (0, 0) is correct.
 */
public final class CallbackRace {
    public static final String LOST_CALL = "0, 1";
    private static final Object X = "x";
    private static final Object Y = "y";

    private final Ring ring;
    private final int head;

    /** The negative-control variant: same ring code, built only where the fence is removed. */
    public CallbackRace(NegativeControl.Checked fenceRemoved, RingFormat format, Ordering ordering, boolean eventIdx) {
        this(format, ordering, eventIdx);
    }

    public CallbackRace(RingFormat format, Ordering ordering, boolean eventIdx) {
        ring = new Ring(format, ordering, eventIdx, AvailPublication.EAGER);
        ring.driver.add(ring.sg.clear().readable(Ring.buffer(0), 4), X);
        ring.driver.kickPrepare();
        int x = ring.device.pop().head();
        ring.device.pushUsed(x, 0);
        ring.device.publishUsed();
        if (!ring.device.needNotify()) {
            throw new IllegalStateException("first notify decision after start must be 'notify'");
        }
        ring.driver.disableCallbacks();
        if (ring.driver.pollUsed() != X || ring.driver.pollUsed() != null) {
            throw new IllegalStateException("set-up round trip failed");
        }
        ring.driver.add(ring.sg.clear().readable(Ring.buffer(1), 4), Y);
        ring.driver.kickPrepare();
        head = ring.device.pop().head();
    }

    /** Device thread: complete Y and decide the notification. Returns 1 when it would notify. */
    public int device() {
        ring.device.pushUsed(head, 0);
        ring.device.publishUsed();
        return ring.device.needNotify() ? 1 : 0;
    }

    /** Driver thread: re-enable callbacks before sleeping. Returns 1 when it would sleep (saw nothing used). */
    public int driver() {
        return ring.driver.enableCallbacksOrFindPending() ? 0 : 1;
    }
}
