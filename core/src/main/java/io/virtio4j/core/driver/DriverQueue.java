package io.virtio4j.core.driver;

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
     * Returns the queue to its initial state (all descriptors free, positions 0, not broken) and initialises the
     * ring in shared memory as a fresh allocation (the device area included, which the spec makes the driver's
     * job at allocation). Only while the device does not use the ring.
     *
     * @throws IllegalStateException when buffers are still in flight: take them back with {@link #detachUnused()}
     */
    void reset();
}
