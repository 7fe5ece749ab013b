package io.virtio4j.core.driver;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.RingFullException;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.stats.QueueCounters;

/**
 * The driver side of one virtqueue, whatever its format: adds buffers, publishes them, kicks, reaps used
 * buffers and controls used-buffer notifications. {@link SplitDriverQueue} and {@link PackedDriverQueue} are its
 * only implementations, so every call site is bimorphic at most.
 *
 * <p>Single-threaded: one thread owns a driver queue. The device is not trusted: what it returns is validated,
 * and a violation breaks the queue.
 *
 * <p>Publication contract: with the EAGER policy each {@link #add} makes its buffer visible to the device; with
 * LAZY only {@link #publish()} and {@link #kickPrepare()} do, and with ADAPTIVE add does it every few buffers. A
 * caller that feeds a polling device and never kicks must call {@link #publish()} (it does not read the other
 * side's state and costs one store), or its buffers stay invisible for ever.
 */
public sealed interface DriverQueue permits SplitDriverQueue, PackedDriverQueue {

    /** A driver queue of the format of {@code areas}, with the ring in shared memory initialised. */
    static DriverQueue over(RingAreas areas, DriverOptions options, Notifier kickNotifier) {
        return switch (areas) {
            case SplitRingAreas s -> new SplitDriverQueue(s, options, kickNotifier);
            case PackedRingAreas p -> new PackedDriverQueue(p, options, kickNotifier);
        };
    }

    int size();

    /** Descriptors free in the ring now. */
    int freeDescriptors();

    /** Buffers added and not yet reaped. */
    int inFlight();

    /** Whether {@code sg} can be added now without {@link RingFullException}. */
    boolean hasRoomFor(ScatterGather sg);

    QueueCounters counters();

    boolean isBroken();

    /**
     * Adds a buffer made of {@code sg}'s elements, identified by {@code token} when it comes back; published as
     * the publication policy says (see the class comment).
     *
     * @throws RingFullException when fewer descriptors are free than the buffer needs
     * @throws IllegalArgumentException when {@code sg} is empty, longer than the queue, or {@code token} is null
     *         ({@link ScatterGather} itself refuses zero-length elements, which devices refuse)
     */
    void add(ScatterGather sg, Object token);

    /** Makes every buffer added so far visible to the device, without deciding about a kick. */
    void publish();

    /**
     * Publishes what is not yet published and decides whether the device needs a kick for the buffers added
     * since the previous call.
     */
    boolean kickPrepare();

    /** Sends the kick that {@link #kickPrepare()} asked for. */
    void notifyDevice();

    /** {@link #kickPrepare()} then, when needed, {@link #notifyDevice()}. Returns whether a kick was sent. */
    boolean kick();

    /** Whether the device has returned buffers not yet reaped. */
    boolean hasUsed();

    /**
     * Reaps the next used buffer: returns its token, or null when there is none. The written length is then
     * available from {@link #lastUsedLength()}.
     */
    Object pollUsed();

    /** Bytes the device wrote into the writable part of the buffer last returned by {@link #pollUsed()}. */
    long lastUsedLength();

    /** Asks the device not to send used-buffer notifications (a hint: it still may). */
    void disableCallbacks();

    /**
     * Asks for a notification at the next used buffer, then re-checks the ring. True means used buffers arrived
     * meanwhile (do not sleep: reap them); false means it is safe to sleep until notified.
     */
    boolean enableCallbacksOrFindPending();

    /**
     * Like {@link #enableCallbacksOrFindPending()} but asks to be notified only after about 3/4 of the
     * outstanding buffers are used (Linux {@code virtqueue_enable_cb_delayed}).
     */
    boolean enableCallbacksDelayedOrFindPending();

    /**
     * Takes back one buffer the driver still owns after the device was reset or stopped for good (Linux
     * {@code virtqueue_detach_unused_buf}): returns its token and frees its descriptors, or null when no buffer
     * is left. Only while the device does not use the ring.
     */
    Object detachUnused();

    /**
     * Prepares the ring for a new device after the previous one went away mid-way (a vhost-user back-end that
     * died or was disconnected), without a record of what it had taken: every buffer still in flight that the old
     * device has not returned (its used entry not published) is offered again. Returns the avail index the new
     * device starts from (its SET_VRING_BASE): the ring's used index, so used entries the old device published and
     * the driver has not reaped yet stay reapable.
     *
     * <p>The old device may have completed buffers out of order, so the avail entries from the used index on no
     * longer name the buffers left: they are rewritten with the heads still in flight and not returned, exactly
     * (avail index - used index) of them, and published. A buffer the old device took and completed but whose used
     * entry it never published runs again (vhost-user inflight tracking is what removes that).
     *
     * <p>Only while no device uses the ring. Not on the data path: it may allocate.
     *
     * @return the index the device resumes from (split: the used index)
     * @throws QueueBrokenException          when the queue is broken
     * @throws io.virtio4j.core.error.RingViolationException when the used ring the old device left names a buffer
     *         not in flight, or twice, or its index moved past the buffers published (the queue is then broken)
     * @throws UnsupportedOperationException for a packed ring: where its device stopped cannot be read back from
     *         the ring
     */
    int reofferInFlight();

    /**
     * Where a new device resumes when it keeps its own record of the buffers it took (vhost-user's inflight area,
     * from which it resubmits them), as QEMU sets a vhost-user-blk ring's base after its back-end went away: the
     * position after the last used entry the old device published, for both halves (split: the ring's used index,
     * the avail half to be moved past the resubmitted buffers by the device; packed: that ring position and its wrap
     * counter). Used entries the driver has not reaped yet stay reapable, and nothing in the ring is rewritten.
     *
     * <p>Only while no device uses the ring.
     *
     * @throws QueueBrokenException when the queue is broken
     * @throws io.virtio4j.core.error.RingViolationException when the used entries the old device left are not
     *         ones it may have written (the queue is then broken), as {@link #pollUsed()} would find
     */
    QueueState deviceResumeState();

    /**
     * Returns the queue to its initial state (all descriptors free, positions 0, not broken) and initialises the
     * ring in shared memory as a fresh allocation (the device area included, which the spec makes the driver's
     * job at allocation). Only while the device does not use the ring.
     *
     * @throws IllegalStateException when buffers are still in flight: take them back with {@link #detachUnused()}
     */
    void reset();
}
