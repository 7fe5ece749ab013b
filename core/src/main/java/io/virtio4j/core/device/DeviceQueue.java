package io.virtio4j.core.device;

import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.stats.QueueCounters;

/**
 * The device side of one virtqueue, whatever its format: pops available buffers, pushes used ones, publishes
 * them in batches and decides used-buffer notifications; asks the driver for kicks or not. Devices, the
 * vhost-user back-end and the benchmarks hold this type and never learn the format: {@link SplitDeviceQueue} and
 * {@link PackedDeviceQueue} are its only implementations, so every call site is bimorphic at most.
 *
 * <p>Single-threaded: one thread owns a device queue. Everything the driver wrote is hostile input: each check
 * raises a specific {@link RingViolationException} naming the field and its value and breaks this queue (later
 * calls throw {@link QueueBrokenException}); nothing outside the ring areas and the guest memory is touched.
 *
 * <p>A buffer is named by the id {@link DescriptorChain#head()} returns: the head descriptor index for split, the
 * buffer id the driver wrote for packed. {@link #pushUsed} takes that id back.
 */
public sealed interface DeviceQueue permits SplitDeviceQueue, PackedDeviceQueue {

    /** A device queue of the format of {@code areas}, standing at its initial state (see {@link #state()}). */
    static DeviceQueue over(RingAreas areas, GuestMemory memory, DeviceOptions options, Notifier callNotifier) {
        return switch (areas) {
            case SplitRingAreas s -> new SplitDeviceQueue(s, memory, options, callNotifier);
            case PackedRingAreas p -> new PackedDeviceQueue(p, memory, options, callNotifier);
        };
    }

    /** Number of ring entries. */
    int size();

    /**
     * Where the queue stands now: the position the next {@link #pop()} reads and the next used entry goes. What
     * vhost-user's GET_VRING_BASE answers. Buffers popped and not yet pushed stay behind it (they are the device's
     * until pushed); a broken queue answers the used position it last published.
     *
     * @throws IllegalStateException when used entries were pushed but not published: a state taken then and
     *         restarted from would have skipped them, and the driver would wait for them for ever
     */
    QueueState state();

    /**
     * Resumes at {@code state}, forgetting buffers in flight and any earlier violation; the next notification
     * decision always notifies. The state is checked against this queue first.
     *
     * @throws io.virtio4j.core.error.InvalidQueueStateException when the state does not fit this queue (the
     *         queue is then broken)
     */
    void restart(QueueState state);

    /**
     * Resumes at {@code state} as {@link #restart(QueueState)} does, and from now on records every buffer in flight
     * in {@code inflightRegion}: this queue's region of vhost-user's inflight area
     * ({@link io.virtio4j.core.layout.InflightLayout}, DPDK's and libvhost-user's byte layout), so that a back-end
     * restarted after a crash can give back what its predecessor took and never returned.
     *
     * <p>A region whose version is 0 is fresh (or the front-end reset the device): it is initialised and nothing is
     * resubmitted, and the queue resumes with its available position at the used position ({@code state}'s used index:
     * split, the ring's used.idx), not at {@code state.nextAvail()} (SET_VRING_BASE's), unlike libvhost-user and DPDK,
     * which keep the base. Why: with no record of what a previous back-end did with the buffers between the two,
     * re-popping them is the only choice that cannot leave the driver waiting for ever for one that was popped and
     * never returned. After a disconnect QEMU sends the used index as the base anyway, so this matters only after an
     * orderly stop followed by a fresh area (a migration destination, a front-end that asks for a new area): there a
     * buffer the old back-end popped and had not returned is done again, and done twice if that back-end still
     * completes it after it was stopped (which a stopped back-end must not do).
     *
     * <p>Otherwise the region is recovered first, as libvhost-user and DPDK do: a used batch that was published but not
     * yet cleared from the region is cleared, and every buffer still marked in flight is resubmitted: the next
     * {@link #pop()}s return them, in the order they were first fetched, before any buffer from the available ring,
     * and the available position moves past them (split: {@code used.idx + resubmitted}).
     * {@link #enableKicksOrFindPending()} reports resubmitted buffers as pending, so a device that looks at the ring
     * once after a start finds them without a kick.
     *
     * <p>Every count, index, link and counter in the region is hostile input (the front-end can write it).
     *
     * <p>The region may be laid out for a larger queue than this ring: QEMU asks for the area with its queue-size
     * property, while the driver may choose a smaller ring. Its desc_num is that queue size (a fresh region gets the
     * smallest queue size from {@link #size()} up whose region has its length, which is the one asked for whenever
     * that is a power of two); the entries at or above {@link #size()} are never used, and a region marking one of
     * them in flight is refused, naming it.
     *
     * @param inflightRegion exactly {@link io.virtio4j.core.layout.InflightLayout#queueRegionBytes} bytes for this
     *                       queue's format and a queue size at least {@link #size()} (the area's); the queue writes it
     *                       from its owning thread from now on
     * @return the number of buffers resubmitted
     * @throws io.virtio4j.core.error.InvalidInflightRegionException when the region's content is not one a back-end
     *         wrote (the queue is then broken and nothing is resubmitted)
     * @throws io.virtio4j.core.error.InvalidQueueStateException as {@link #restart(QueueState)}
     * @throws IllegalArgumentException when the region's length is not the region size of any queue size from
     *         {@link #size()} up
     */
    int restart(QueueState state, java.lang.foreign.MemorySegment inflightRegion);

    QueueCounters counters();

    boolean isBroken();

    /** The violation that broke the queue, or null. */
    RingViolationException violation();

    /**
     * Breaks the queue for a reason outside the ring, e.g. the thread serving it died: every later call fails
     * with {@link QueueBrokenException}, as after a violation, until {@link #restart}. A queue already broken keeps
     * its first cause. Called by the thread that owns the queue.
     */
    void fail(RingViolationException cause);

    /**
     * Pops the next available buffer, or returns null when the driver has made none available. The returned
     * chain is reused by the next pop.
     */
    DescriptorChain pop();

    /**
     * Gives back the buffer popped last, so the next pop returns it again (vhost's {@code vhost_discard_vq_desc}):
     * for a device that took buffers it cannot use after all. Buffers are given back in the reverse order of
     * popping.
     *
     * @throws IllegalStateException when {@code id} is not the buffer popped last and not yet pushed
     */
    void unpop(int id);

    /**
     * Writes a used entry for buffer {@code id} with {@code writtenBytes} bytes written into its writable part.
     * Not visible to the driver until {@link #publishUsed()} or {@link #flushUsed()}.
     *
     * @throws IllegalStateException    when {@code id} is not a buffer popped from this queue and not yet pushed
     * @throws IllegalArgumentException when {@code writtenBytes} is negative, more than the buffer's writable part,
     *         or more than 2^32 - 1 (a used length has 32 bits)
     */
    void pushUsed(int id, long writtenBytes);

    /** Makes every used entry pushed so far visible to the driver, with one publication. */
    void publishUsed();

    /**
     * Whether the driver wants a used-buffer notification for the entries published since the last decision.
     * The first decision after a (re)start always says yes.
     */
    boolean needNotify();

    /** {@link #flushUsedOutcome}: nothing was published since the last decision, so there was none to make. */
    int FLUSH_NONE = 0;
    /** {@link #flushUsedOutcome}: the driver was notified. */
    int FLUSH_NOTIFIED = 1;
    /**
     * {@link #flushUsedOutcome}: used entries were published and the driver wanted no notification (EVENT_IDX's event
     * index not crossed, or NO_INTERRUPT), so none was sent.
     */
    int FLUSH_SUPPRESSED = 2;

    /**
     * Publishes the used entries pushed so far and notifies the driver if it asked for it.
     *
     * @return {@link #FLUSH_NONE}, {@link #FLUSH_NOTIFIED} or {@link #FLUSH_SUPPRESSED}, for a device's counters
     */
    int flushUsedOutcome();

    /**
     * {@link #flushUsedOutcome} for a caller that only wants to know whether the driver was notified.
     *
     * @return whether a notification was sent
     */
    default boolean flushUsed() {
        return flushUsedOutcome() == FLUSH_NOTIFIED;
    }

    /** Asks the driver not to kick (a hint: it still may). */
    void disableKicks();

    /**
     * Asks the driver to kick for the next available buffer, then looks at the ring again. True means buffers
     * are available (do not sleep: pop them); false means it is safe to sleep until kicked.
     */
    boolean enableKicksOrFindPending();

    /**
     * Dirty logging (vhost-user migration): from now on every write of this queue into its own ring areas is marked in
     * {@code log}, after it is stored; null stops it. Split: the used ring's entries, index, flags and avail_event,
     * the used ring lying at guest-physical {@code usedGuestAddr} (vhost-user's {@code log_guest_addr}). Packed: the
     * used descriptors, in the descriptor ring at guest-physical {@code descGuestAddr}, and the device event
     * suppression area at {@code usedGuestAddr} (where QEMU's {@code log_guest_addr} points for a packed ring).
     * Data a device writes into buffers is the device's to mark. Without a log the hot path pays one null check. A
     * write the log has no bit for breaks the queue with {@link io.virtio4j.core.error.DirtyLogOverflowException}.
     * Called by the thread that owns the queue, or before the queue is handed to it.
     *
     * @param descGuestAddr the descriptor area's guest-physical address; a split queue never writes there and
     *                      ignores it
     */
    void logUsed(DirtyLog log, long usedGuestAddr, long descGuestAddr);
}
