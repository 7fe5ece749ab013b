package io.virtio4j.core.driver;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.RingFullException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.UsedBatchTooLongException;
import io.virtio4j.core.error.UsedLengthTooLargeException;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.ordering.Fences;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.stats.QueueCounters;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Comparator;

import static io.virtio4j.core.layout.SplitLayout.AVAIL_F_NO_INTERRUPT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_WRITE;
import static io.virtio4j.core.layout.SplitLayout.USED_F_NO_NOTIFY;

/**
 * Driver side of a split virtqueue (the role of Linux {@code virtio_ring.c}): adds buffers, kicks, reaps
 * used buffers and controls used-buffer notifications.
 *
 * <p>Single-threaded: one thread owns a driver queue. The device is another thread or process and is not
 * trusted: what it returns in the used ring is validated, and a violation breaks the queue.
 *
 * <p>The free list and each chain's links are kept in private arrays, never read back from the shared
 * descriptor table, so a device scribbling on the table cannot corrupt the driver's state.
 *
 * <p>VIRTIO_F_IN_ORDER ({@link DriverOptions#inOrder()}): descriptors are handed out in table order from 0,
 * wrapping, and a chain links {@code x} to {@code x + 1} (the last table entry to 0); an indirect buffer takes one
 * descriptor. The links are then one fixed circle and, since buffers come back in the order they were added, the
 * free descriptors are always one run that starts at the next to hand out. The device may return a batch with
 * one used entry: its id is the head of the batch's last buffer, it sits in the used slot of the batch's first
 * buffer, and used.idx advances by the batch's size. Reading such an entry completes every buffer in flight up
 * to that id, in order: {@link #pollUsed()} returns them one by one, each buffer before the last with its whole
 * writable part as written length (the spec counts skipped buffers as fully used), the last with the entry's
 * len. An id that is no head in flight breaks the queue ({@link InvalidUsedIdException}), and so does one that
 * would complete more buffers than used.idx advanced by ({@link UsedBatchTooLongException}).
 * {@link #detachUnused()} takes buffers back in any order and must be followed by {@link #reset()}. Buffers of a
 * fixed descriptor count put the same head in each avail slot lap after lap; an entry equal to what the slot holds
 * is not stored again, so a device polling close behind keeps its shared copy of the line (docs/ring-formats.md).
 */
public final class SplitDriverQueue implements DriverQueue {
    private final int size;
    private final int mask;
    private final MemorySegment desc;
    private final AvailRing avail;
    private final UsedRing used;
    private final Notifier kickNotifier;
    private final boolean strong;
    private final boolean eventIdx;
    private final AvailPublication publication;
    private final int adaptiveMin;
    private final int adaptiveMax;
    private final boolean inOrder;

    private final MemorySegment indirectTables;
    private final long indirectTablesGuestAddr;
    private final int indirectMaxElements;
    private final int indirectThreshold;

    /** Private descriptor links: the free list, and the chain order of descriptors in flight. */
    private final int[] next;
    /** Token of the buffer whose head is at this index, null when the index is not a head in flight. */
    private final Object[] tokens;
    /** Descriptors a head occupies in the main table (1 for an indirect buffer). */
    private final int[] chainDescs;
    /** Bytes of the writable part of each head's buffer: the most the device may claim to have written. */
    private final long[] writableBytes;
    /** When each head's buffer was added (a count of adds): the order {@link #reofferInFlight()} offers them in. */
    private final long[] addedAt;
    private long adds;

    /** Where {@link #detachUnused()} looks next: heads below it hold no token. */
    private int detachCursor;
    private int freeHead;
    private int numFree;
    /** Next avail.idx value: where the next head goes. */
    private int availShadow;
    /** Last value stored to avail.idx. */
    private int availPublished;
    /** Buffers added since the last kickPrepare. */
    private int numAdded;
    private int adaptiveInterval;
    private int sincePublish;

    private int lastUsed;
    /** Last used.idx value read from shared memory: entries up to it can be reaped without reading again. */
    private int usedSeen;
    private int availFlagsShadow;
    private long lastUsedLength;
    /** Buffers of the used entry read last that {@link #pollUsed()} has yet to return (IN_ORDER batches). */
    private int batchLeft;
    /** Head of the last buffer of that entry (its id), and the length the entry reports for it. */
    private int batchLastHead;
    private long batchLastLength;

    private final QueueCounters counters = new QueueCounters();
    private RingViolationException broken;

    public SplitDriverQueue(SplitRingAreas areas, DriverOptions options, Notifier kickNotifier) {
        this.size = areas.queueSize();
        this.mask = size - 1;
        this.desc = areas.descTable();
        this.avail = new AvailRing(areas.availRing(), size);
        this.used = new UsedRing(areas.usedRing(), size);
        this.kickNotifier = kickNotifier;
        this.strong = options.ordering() == Ordering.STRONG;
        this.eventIdx = options.eventIdx();
        this.publication = options.publication();
        this.adaptiveMin = options.adaptiveMin();
        this.adaptiveMax = options.adaptiveMax();
        this.inOrder = options.inOrder();
        this.indirectTables = options.indirectTables();
        this.indirectTablesGuestAddr = options.indirectTablesGuestAddr();
        this.indirectMaxElements = options.indirectMaxElements();
        this.indirectThreshold = options.indirectThreshold();
        options.requireIndirectTablesFor(size);
        this.next = new int[size];
        this.tokens = new Object[size];
        this.chainDescs = new int[size];
        this.writableBytes = new long[size];
        this.addedAt = new long[size];
        initialise();
    }

    @Override
    public void reset() {
        if (numFree != size) {
            throw new IllegalStateException((size - numFree) + " descriptors still belong to buffers the driver has not"
                    + " taken back: reap them or detachUnused() them first");
        }
        initialise();
    }

    /**
     * All descriptors free, positions 0, not broken; the ring's headers zeroed in both areas, as for a fresh
     * allocation (the spec makes zeroing the used ring's flags the driver's job). The device must not be using it.
     */
    private void initialise() {
        for (int i = 0; i < size; i++) {
            // IN_ORDER: one circle in table order, the last entry linking to 0, never changed afterwards.
            next[i] = inOrder ? (i + 1) & mask : i + 1;
            tokens[i] = null;
        }
        freeHead = 0;
        numFree = size;
        detachCursor = 0;
        availShadow = availPublished = numAdded = 0;
        lastUsed = usedSeen = 0;
        batchLeft = 0;
        availFlagsShadow = 0;
        adaptiveInterval = adaptiveMin;
        sincePublish = 0;
        broken = null;
        avail.flagsRelease(0);
        avail.idxRelease(0);
        avail.usedEventRelease(0);
        used.flagsRelease(0);
        used.idxRelease(0);
        used.availEventRelease(0);
    }

    @Override
    public int reofferInFlight() {
        checkNotBroken();
        // Also checks the old device's used.idx: it moved at most by the buffers published (else the queue breaks).
        int usedIdx = refreshUsed();
        int returned = (usedIdx - lastUsed) & 0xFFFF;
        int left = (availShadow - usedIdx) & 0xFFFF;
        int written = 0;
        if (inOrder) {
            // Buffers come back in the order added: the first `returned` in flight (from the oldest, after the free
            // run) are in the used ring, the rest follow on the circle in the order they were added.
            int h = (freeHead + numFree) & mask;
            for (int i = 0; i < returned; i++) {
                h = (h + chainDescs[h]) & mask;
            }
            for (; written < left && tokens[h] != null; written++) {
                avail.entry((usedIdx + written) & mask, h);
                h = (h + chainDescs[h]) & mask;
            }
        } else {
            // The used entries not yet reaped name the buffers the old device returned; it may have returned them
            // in any order, so which ones are left is read from them, checked as pollUsed() would (the old device
            // was no more trusted than any other).
            boolean[] isReturned = new boolean[size];
            for (int i = 0; i < returned; i++) {
                int slot = (lastUsed + i) & mask;
                int id = used.elemId(slot);
                if (Integer.compareUnsigned(id, size) >= 0 || tokens[id] == null || isReturned[id]) {
                    throw breakWith(new InvalidUsedIdException("used.ring[" + slot + "].id", Integer.toUnsignedLong(id),
                            "is not the head of a buffer in flight, or returned twice"));
                }
                isReturned[id] = true;
            }
            // In the order added (a network device must not reorder a queue's packets), kept privately: the avail
            // ring the old device could write is not trusted for it, and a buffer in flight for long has had its
            // avail slot reused.
            Integer[] heads = new Integer[left];
            int n = 0;
            for (int h = 0; h < size && n < left; h++) {
                if (tokens[h] != null && !isReturned[h]) {
                    heads[n++] = h;
                }
            }
            Arrays.sort(heads, 0, n, Comparator.comparingLong(h -> addedAt[h]));
            for (; written < n; written++) {
                avail.entry((usedIdx + written) & mask, heads[written]);
            }
        }
        if (written != left) {
            // Cannot happen while the books above are right: every buffer in flight has its head's token.
            throw new IllegalStateException("ring resumes at used index " + usedIdx + " with " + left
                    + " buffers to offer again, but " + written + " heads are in flight and not returned");
        }
        counters.availEntryWrites += written;
        // The rewritten entries, and any added while no device was there, are published now; the release orders them.
        publishAvail();
        return usedIdx;
    }

    @Override
    public QueueState deviceResumeState() {
        checkNotBroken();
        // Also checks the old device's used.idx: it moved at most by the buffers published (else the queue breaks).
        int usedIdx = refreshUsed();
        return QueueState.split(usedIdx, usedIdx);
    }

    @Override
    public Object detachUnused() {
        for (; detachCursor < size; detachCursor++) {
            Object token = tokens[detachCursor];
            if (token != null) {
                tokens[detachCursor] = null;
                freeChain(detachCursor);
                return token;
            }
        }
        return null;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public int freeDescriptors() {
        return numFree;
    }

    /** Buffers added and not yet reaped. */
    @Override
    public int inFlight() {
        return (availShadow - lastUsed) & 0xFFFF;
    }

    /** Whether {@code sg} can be added now without {@link RingFullException}. */
    @Override
    public boolean hasRoomFor(ScatterGather sg) {
        return numFree >= descriptorsFor(sg.count());
    }

    private int descriptorsFor(int elements) {
        return useIndirect(elements) ? 1 : elements;
    }

    private boolean useIndirect(int elements) {
        return indirectTables != null && elements >= indirectThreshold && elements <= indirectMaxElements;
    }

    @Override
    public QueueCounters counters() {
        return counters;
    }

    @Override
    public boolean isBroken() {
        return broken != null;
    }

    private void checkNotBroken() {
        if (broken != null) {
            throw new QueueBrokenException("driver queue", broken);
        }
    }

    private RingViolationException breakWith(RingViolationException e) {
        broken = e;
        counters.errors++;
        return e;
    }

    /**
     * Adds a buffer made of {@code sg}'s elements, identified by {@code token} when it comes back.
     * Publishes {@code avail.idx} according to the publication policy; kick with {@link #kick()} or
     * {@link #kickPrepare()} / {@link #notifyDevice()}.
     *
     * @throws RingFullException when fewer descriptors are free than the buffer needs
     */
    @Override
    public void add(ScatterGather sg, Object token) {
        checkNotBroken();
        sg.requireAddable(token, size);
        int elements = sg.count();
        boolean indirect = useIndirect(elements);
        int needed = indirect ? 1 : elements;
        if (numFree < needed) {
            throw new RingFullException(needed, numFree);
        }
        int head = freeHead;
        long writable = 0;
        if (indirect) {
            long tableOffset = (long) head * indirectMaxElements * SplitLayout.DESC_SIZE;
            for (int i = 0; i < elements; i++) {
                int flags = (sg.isWritable(i) ? DESC_F_WRITE : 0) | (i + 1 < elements ? DESC_F_NEXT : 0);
                Descriptors.write(indirectTables, tableOffset, i, sg.addr(i), sg.len(i), flags, i + 1 < elements ? i + 1 : 0);
                if (sg.isWritable(i)) {
                    writable += Integer.toUnsignedLong(sg.len(i));
                }
            }
            Descriptors.write(desc, 0, head, indirectTablesGuestAddr + tableOffset,
                    elements * SplitLayout.DESC_SIZE, DESC_F_INDIRECT, 0);
            freeHead = next[head];
        } else {
            int idx = head;
            int last = head;
            for (int i = 0; i < elements; i++) {
                boolean more = i + 1 < elements;
                int flags = (sg.isWritable(i) ? DESC_F_WRITE : 0) | (more ? DESC_F_NEXT : 0);
                Descriptors.write(desc, 0, idx, sg.addr(i), sg.len(i), flags, more ? next[idx] : 0);
                if (sg.isWritable(i)) {
                    writable += Integer.toUnsignedLong(sg.len(i));
                }
                last = idx;
                idx = next[idx];
            }
            freeHead = next[last];
        }
        numFree -= needed;
        chainDescs[head] = needed;
        tokens[head] = token;
        writableBytes[head] = writable;
        addedAt[head] = adds++;

        int slot = availShadow & mask;
        // IN_ORDER with buffers of a fixed descriptor count makes the ring's entries the same every lap (a ring of
        // one-descriptor buffers holds slot i -> head i for good): store only an entry that differs. A device that
        // polls close behind us keeps reading the line of entries we are filling, and each store into it would
        // have to take the line back from the device's cache (a request for ownership) first; a load of an equal
        // value hits the shared copy. The device reads the same value either way: the equal value was stored on an
        // earlier lap, before an earlier release of avail.idx (or was there before the ring was handed over), so the
        // device's acquire of the new index orders its read after that store too. Compared with the ring, not a
        // private copy: an entry the device scribbled over is stored again.
        if (!inOrder || avail.entry(slot) != head) {
            avail.entry(slot, head);
            counters.availEntryWrites++;
        }
        availShadow = (availShadow + 1) & 0xFFFF;
        numAdded++;
        counters.buffers++;

        switch (publication) {
            case EAGER -> publishAvail();
            case LAZY -> { }
            case ADAPTIVE -> {
                if (++sincePublish >= adaptiveInterval) {
                    publishAvail();
                }
            }
        }
        // The device compares 16-bit indices: 65535 unkicked adds would make old == new modulo 2^16.
        if (numAdded == 0xFFFF) {
            kick();
        }
    }

    @Override
    public void publish() {
        checkNotBroken();
        if (availPublished != availShadow) {
            publishAvail();
        }
    }

    private void publishAvail() {
        // wmb (store->store): the descriptors and avail.ring entries written above must be visible before the
        // new avail.idx, or the device can read a head that is not there yet or a half-written descriptor.
        // WEAK: the release store below orders them. STRONG: a full fence first, as for a hardware peer.
        if (strong) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        avail.idxRelease(availShadow);
        availPublished = availShadow;
        sincePublish = 0;
        counters.availIdxWrites++;
    }

    /**
     * Publishes {@code avail.idx} if the policy has not yet, and decides whether the device needs a kick for
     * the buffers added since the previous call.
     */
    @Override
    public boolean kickPrepare() {
        checkNotBroken();
        if (availPublished != availShadow) {
            publishAvail();
        }
        int newIdx = availShadow;
        int oldIdx = (newIdx - numAdded) & 0xFFFF;
        if (numAdded == 0) {
            return false;
        }
        numAdded = 0;
        // mb (store->load): our avail.idx store must be visible before we load avail_event / used.flags. The
        // device does the mirror image (stores avail_event or clears NO_NOTIFY, then loads avail.idx). Without a
        // full fence both loads can pass both stores (x86 store buffers do this): we see "suppressed" and skip
        // the kick while the device sees the old index and goes to sleep. The buffers then wait forever.
        Fences.storeLoad();
        boolean needKick = eventIdx
                ? SplitLayout.needEvent(used.availEventAcquire(), newIdx, oldIdx)
                : (used.flagsAcquire() & USED_F_NO_NOTIFY) == 0;
        if (needKick) {
            adaptiveInterval = adaptiveMin;
        } else {
            counters.kicksSuppressed++;
            if (adaptiveInterval < adaptiveMax) {
                adaptiveInterval = Math.min(adaptiveMax, adaptiveInterval * 2);
            }
        }
        return needKick;
    }

    /** Sends the kick that {@link #kickPrepare()} asked for. */
    @Override
    public void notifyDevice() {
        counters.kicksSent++;
        kickNotifier.signal();
    }

    /** {@link #kickPrepare()} then, when needed, {@link #notifyDevice()}. Returns whether a kick was sent. */
    @Override
    public boolean kick() {
        if (kickPrepare()) {
            notifyDevice();
            return true;
        }
        return false;
    }

    /** Whether the device has returned buffers not yet reaped (reads {@code used.idx} only when needed). */
    @Override
    public boolean hasUsed() {
        checkNotBroken();
        return lastUsed != usedSeen || refreshUsed() != lastUsed;
    }

    private int refreshUsed() {
        int idx = used.idxAcquire();
        counters.usedIdxReads++;
        // rmb: in WEAK mode the acquire load above orders the used elements (and the payload the device wrote)
        // after the index; STRONG adds a full fence, as a driver does towards a hardware device, and only when
        // the index moved past what we took back: with nothing new no used element or payload is read after
        // it (Linux's virtqueue_get_buf takes virtio_rmb only once more_used() said yes).
        if (strong && idx != lastUsed) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        // Only published buffers can have been used: under LAZY/ADAPTIVE some added ones are not visible yet.
        int outstanding = (availPublished - lastUsed) & 0xFFFF;
        int advanced = (idx - lastUsed) & 0xFFFF;
        if (advanced > outstanding) {
            throw breakWith(new IndexJumpException("used.idx", idx, "moved " + advanced
                    + " entries past last seen " + lastUsed + " with only " + outstanding + " published buffers outstanding"));
        }
        usedSeen = idx;
        return idx;
    }

    /**
     * Reaps the next used buffer: returns its token, or null when there is none. The written length is then
     * available from {@link #lastUsedLength()}.
     */
    @Override
    public Object pollUsed() {
        checkNotBroken();
        if (batchLeft == 0) {
            if (!hasUsed()) {
                return null;
            }
            readUsedEntry();
        }
        // IN_ORDER: the oldest buffer in flight comes next, right after the free run; otherwise the entry's id.
        int head = inOrder ? (freeHead + numFree) & mask : batchLastHead;
        batchLeft--;
        Object token = tokens[head];
        lastUsedLength = head == batchLastHead ? batchLastLength : writableBytes[head];
        tokens[head] = null;
        freeChain(head);
        lastUsed = (lastUsed + 1) & 0xFFFF;
        counters.completions++;
        if (eventIdx && (availFlagsShadow & AVAIL_F_NO_INTERRUPT) == 0) {
            // Callbacks are on: ask for a notification at the next entry, and (mb, store->load) make that store
            // visible before our next load of used.idx, so the device cannot skip a notification for an entry
            // we have not seen yet (the same Dekker pair as in enableCallbacksOrFindPending).
            avail.usedEventRelease(lastUsed);
            Fences.storeLoad();
        }
        return token;
    }

    /**
     * Validates the used entry at {@code lastUsed} and makes it the batch {@link #pollUsed()} returns: one buffer,
     * or under IN_ORDER every buffer in flight up to the entry's id.
     */
    private void readUsedEntry() {
        int slot = lastUsed & mask;
        int id = used.elemId(slot);
        long len = used.elemLen(slot);
        if (Integer.compareUnsigned(id, size) >= 0) {
            throw breakWith(new InvalidUsedIdException("used.ring[" + slot + "].id", Integer.toUnsignedLong(id),
                    "not below the queue size " + size));
        }
        if (tokens[id] == null) {
            throw breakWith(new InvalidUsedIdException("used.ring[" + slot + "].id", id,
                    "is not the head of a buffer in flight"));
        }
        if (len > writableBytes[id]) {
            throw breakWith(new UsedLengthTooLargeException("used.ring[" + slot + "].len", len,
                    "exceeds the " + writableBytes[id] + " writable bytes of buffer " + id));
        }
        int buffers = 1;
        if (inOrder) {
            // Count the buffers from the oldest in flight up to id, stepping head to head. Bounded by the entries
            // used.idx advanced by, which are at most the published buffers in flight (refreshUsed checked), so
            // the walk never leaves the buffers in flight and always ends.
            int advanced = (usedSeen - lastUsed) & 0xFFFF;
            for (int h = (freeHead + numFree) & mask; h != id; h = (h + chainDescs[h]) & mask) {
                if (++buffers > advanced) {
                    throw breakWith(new UsedBatchTooLongException("used.ring[" + slot + "].id", id,
                            "completes every buffer in flight up to head " + id + ": more than the " + advanced
                                    + " entries used.idx advanced by (IN_ORDER)"));
                }
            }
        }
        batchLeft = buffers;
        batchLastHead = id;
        batchLastLength = len;
    }

    /** Bytes the device wrote into the writable part of the buffer last returned by {@link #pollUsed()}. */
    @Override
    public long lastUsedLength() {
        return lastUsedLength;
    }

    private void freeChain(int head) {
        if (inOrder) {
            // The links are a fixed circle and buffers come back in order: the freed descriptors are the ones
            // right after the free run, which simply grows.
            numFree += chainDescs[head];
            return;
        }
        int last = head;
        for (int i = chainDescs[head]; i > 1; i--) {
            last = next[last];
        }
        next[last] = freeHead;
        freeHead = head;
        numFree += chainDescs[head];
    }

    /** Asks the device not to send used-buffer notifications (a hint: it still may). */
    @Override
    public void disableCallbacks() {
        counters.disableCalls++;
        if ((availFlagsShadow & AVAIL_F_NO_INTERRUPT) != 0) {
            return;
        }
        availFlagsShadow |= AVAIL_F_NO_INTERRUPT;
        if (eventIdx) {
            // With EVENT_IDX the flag is ignored; point used_event as far away as 16 bits allow.
            avail.usedEventRelease((lastUsed - 1) & 0xFFFF);
        } else {
            avail.flagsRelease(availFlagsShadow);
        }
    }

    /**
     * Asks for a notification at the next used buffer, then re-checks the ring. Reads like the device's
     * {@link io.virtio4j.core.device.SplitDeviceQueue#enableKicksOrFindPending()}: true means work is pending.
     *
     * @return true when used buffers arrived meanwhile (do not sleep: reap them first); false when nothing is
     *         pending, so it is safe to sleep until notified
     */
    @Override
    public boolean enableCallbacksOrFindPending() {
        checkNotBroken();
        counters.enableCalls++;
        return armOrFindPending(lastUsed, 0);
    }

    /**
     * Like {@link #enableCallbacksOrFindPending()} but asks to be notified only after about 3/4 of the
     * published buffers not yet reaped are used (Linux {@code virtqueue_enable_cb_delayed}); buffers added and not yet
     * published do not count, since the device cannot use them.
     *
     * @return true when that many buffers are already used (do not sleep: reap them); false when it is safe
     *         to sleep
     */
    @Override
    public boolean enableCallbacksDelayedOrFindPending() {
        checkNotBroken();
        counters.enableCalls++;
        // Only published buffers can come back: under LAZY/ADAPTIVE the added but unpublished ones would push
        // used_event past what the device can ever reach with what it sees (Linux counts avail_idx_shadow, which
        // is what it has published by then).
        int bufs = ((availPublished - lastUsed) & 0xFFFF) * 3 / 4;
        return armOrFindPending((lastUsed + bufs) & 0xFFFF, bufs);
    }

    private boolean armOrFindPending(int usedEvent, int tolerated) {
        availFlagsShadow &= ~AVAIL_F_NO_INTERRUPT;
        if (eventIdx) {
            avail.usedEventRelease(usedEvent);
        } else {
            avail.flagsRelease(availFlagsShadow);
        }
        // mb (store->load): the used_event / flags store must be visible before we re-read used.idx. The device
        // stores used.idx then loads used_event / flags; without the fence it can read the old "no interrupt"
        // state while we read the old used.idx, and we sleep with a used buffer and no notification coming.
        Fences.storeLoad();
        int idx = refreshUsed();
        return ((idx - lastUsed) & 0xFFFF) > tolerated;
    }
}
