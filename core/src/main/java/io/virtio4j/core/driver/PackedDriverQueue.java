package io.virtio4j.core.driver;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.ReservedEventModeException;
import io.virtio4j.core.error.RingFullException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.UsedLengthTooLargeException;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.ordering.Fences;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.stats.QueueCounters;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.virtio4j.core.layout.PackedLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;
import static io.virtio4j.core.layout.PackedLayout.DESC_SIZE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DESC;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DISABLE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_ENABLE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_WRAP_BIT;

/**
 * Driver side of a packed virtqueue (virtqueue.md 3.5; the role of Linux's packed half of {@code virtio_ring.c}):
 * adds buffers at consecutive ring slots, kicks, reaps used descriptors and controls used-buffer notifications.
 *
 * <p>Single-threaded: one thread owns a driver queue. The device is not trusted: every used descriptor and the
 * device event suppression structure are validated, and a violation breaks the queue. Buffer ids, slot counts,
 * tokens and writable lengths live in private arrays, never read back from the ring.
 *
 * <p><b>Buffer ids.</b> Without IN_ORDER an id comes from a private stack of free ids (all below the queue
 * size). With IN_ORDER a buffer's id is its first ring slot (as Linux's in-order packed path does): ids are then
 * sequential in ring order, unique among buffers in flight, and a batch's last id tells the driver where the
 * batch ends without any other state.
 *
 * <p><b>Publication.</b> In the packed format there is no index to publish: the store of a buffer's first
 * descriptor's flags (its AVAIL/USED bits) is what makes it, and the rest of its list, visible. The policies
 * translate as follows. EAGER stores each head's flags with release at {@link #add}. LAZY holds back only the
 * head flags of the <em>first</em> unpublished buffer; later heads are stored plainly, since the device reads
 * only its next position and nothing past the held-back head is reachable; {@link #publish()} and
 * {@link #kickPrepare()} then store the held-back flags with one release, which makes the whole batch visible
 * (the "batched enqueue" of DPDK and Linux: four single-slot buffers filling one cache line go out with one
 * release store). ADAPTIVE does LAZY's hold-back and stores the held head every few adds, the interval
 * doubling while kicks are suppressed, as for split. {@code availIdxWrites} counts these publication stores.
 * EAGER costs one release store per buffer (a plain store on x86) and no shared-memory read.
 *
 * <p>{@code usedIdxReads} counts loads of the flags at the next used position, the packed analogue of reading
 * {@code used.idx}.
 */
public final class PackedDriverQueue implements DriverQueue {
    private final int size;
    private final MemorySegment desc;
    private final EventSuppression driverEvent;
    private final EventSuppression deviceEvent;
    private final Notifier kickNotifier;
    private final boolean strong;
    private final boolean eventIdx;
    private final boolean inOrder;
    private final AvailPublication publication;
    private final int adaptiveMin;
    private final int adaptiveMax;

    private final MemorySegment indirectTables;
    private final long indirectTablesGuestAddr;
    private final int indirectMaxElements;
    private final int indirectThreshold;

    /** Free buffer ids (without IN_ORDER), the top of the stack at {@code freeIdCount - 1}. */
    private final int[] freeIds;
    private int freeIdCount;
    /** Token of the buffer with this id, null when the id is not in flight. */
    private final Object[] tokens;
    /** Ring slots the buffer with this id occupies (1 for an indirect buffer). */
    private final int[] slotCount;
    /** Bytes of the writable part of each buffer: the most the device may claim to have written. */
    private final long[] writableBytes;
    /** Unwrapped ring position of the buffer's first slot, to tell published buffers from held-back ones. */
    private final int[] headSeq;

    private int numFree;
    private int inFlight;
    /** Where {@link #detachUnused()} looks next: ids below it hold no token. */
    private int detachCursor;

    /** Ring slot and wrap counter of the next descriptor to make available. */
    private int nextAvail;
    private boolean availWrap;
    /**
     * Unwrapped positions (slot counts since the start, modulo 2^32): slots written, slots published, slots
     * used. At most one ring apart, so differences are exact.
     */
    private int availSeq;
    private int publishedSeq;
    /** LAZY/ADAPTIVE: ring slot of the first unpublished buffer's head, whose flags are held back; -1 if none. */
    private int heldSlot;
    private int heldFlags;
    /**
     * Slots added since the last kickPrepare, saturated at the queue size: the device's position is never more
     * than a ring behind ours, so an event it is waiting on lies within the last lap, and a 16-bit distance
     * cannot overflow however long the driver goes without kicking.
     */
    private int slotsSinceKick;
    private int adaptiveInterval;
    private int sincePublish;

    /** Ring slot and wrap counter where the next used descriptor is expected. */
    private int nextUsed;
    private boolean usedWrap;
    private int usedSeq;
    /** IN_ORDER: id of the last buffer of the batch being reaped, -1 when no batch is pending. */
    private int batchLastId;
    private long batchLastLen;
    /** IN_ORDER: first slot (= id) of the next buffer of the pending batch to hand out. */
    private int reapSlot;

    /** Shadow of the driver event suppression structure, which only this side writes. */
    private int driverEventMode;
    private int driverEventOffWrap;
    private long lastUsedLength;

    private final QueueCounters counters = new QueueCounters();
    private RingViolationException broken;

    public PackedDriverQueue(PackedRingAreas areas, DriverOptions options, Notifier kickNotifier) {
        this.size = areas.queueSize();
        this.desc = areas.descRing().asSlice(0, PackedLayout.descRingBytes(size));
        this.driverEvent = new EventSuppression(areas.driverEvent());
        this.deviceEvent = new EventSuppression(areas.deviceEvent());
        this.kickNotifier = kickNotifier;
        this.strong = options.ordering() == Ordering.STRONG;
        this.eventIdx = options.eventIdx();
        this.inOrder = options.inOrder();
        this.publication = options.publication();
        this.adaptiveMin = options.adaptiveMin();
        this.adaptiveMax = options.adaptiveMax();
        this.indirectTables = options.indirectTables();
        this.indirectTablesGuestAddr = options.indirectTablesGuestAddr();
        this.indirectMaxElements = options.indirectMaxElements();
        this.indirectThreshold = options.indirectThreshold();
        options.requireIndirectTablesFor(size);
        this.freeIds = new int[size];
        this.tokens = new Object[size];
        this.slotCount = new int[size];
        this.writableBytes = new long[size];
        this.headSeq = new int[size];
        initialise();
    }

    @Override
    public void reset() {
        if (inFlight != 0) {
            throw new IllegalStateException(inFlight + " buffers still belong to the driver: reap them or"
                    + " detachUnused() them first");
        }
        initialise();
    }

    /**
     * All ids and slots free, positions 0, wrap counters 1, not broken; the descriptor ring and both event
     * suppression structures zeroed as for a fresh allocation (the ring must start zero-filled: a slot the device
     * finds non-zero could look available). The device must not be using it.
     */
    private void initialise() {
        for (int i = 0; i < size; i++) {
            // Reversed, so that ids are handed out 0, 1, 2, ... from a fresh queue.
            freeIds[i] = size - 1 - i;
            tokens[i] = null;
        }
        freeIdCount = size;
        numFree = size;
        inFlight = 0;
        detachCursor = 0;
        nextAvail = 0;
        availWrap = true;
        availSeq = publishedSeq = 0;
        heldSlot = -1;
        slotsSinceKick = 0;
        adaptiveInterval = adaptiveMin;
        sincePublish = 0;
        nextUsed = 0;
        usedWrap = true;
        usedSeq = 0;
        batchLastId = -1;
        reapSlot = 0;
        lastUsedLength = 0;
        broken = null;
        desc.fill((byte) 0);
        driverEventMode = EVENT_F_ENABLE;
        driverEventOffWrap = 0;
        // The release stores also order the plain zeroing of the ring above before them.
        driverEvent.release(0, EVENT_F_ENABLE);
        deviceEvent.release(0, EVENT_F_ENABLE);
    }

    /**
     * Refused: a packed ring keeps the device's position only in the device, and the descriptors it wrote back
     * overwrote the driver's, so what to offer again cannot be read back from the ring.
     */
    @Override
    public int reofferInFlight() {
        throw new UnsupportedOperationException("a packed ring cannot be resumed after its device went away: the "
                + "device's position and the buffers it took are not recoverable from the ring");
    }

    /**
     * The driver's next used position, moved past every used descriptor the old device wrote there that the driver
     * has not reaped yet (each checked as {@link #pollUsed()} checks it, nothing reaped): the device writes its next
     * used descriptor after them.
     */
    @Override
    public QueueState deviceResumeState() {
        checkNotBroken();
        int slot = nextUsed;
        boolean wrap = usedWrap;
        int seq = usedSeq;
        // Bounded by the ring: used descriptors can stand for at most the slots in flight, a full ring.
        for (int scanned = 0; scanned < size && usedFlagsAt(slot, wrap, seq) >= 0; ) {
            int span = usedSpan(checkedUsedId(slot, seq), seq);
            scanned += span;
            seq += span;
            slot += span;
            if (slot >= size) {
                slot -= size;
                wrap = !wrap;
            }
        }
        return new QueueState(slot, wrap, slot, wrap);
    }

    @Override
    public Object detachUnused() {
        // The ring is being taken apart: a pending IN_ORDER batch or a held-back head refers to buffers handed
        // back here, and must not be reaped or published later.
        batchLastId = -1;
        heldSlot = -1;
        for (; detachCursor < size; detachCursor++) {
            if (tokens[detachCursor] != null) {
                return release(detachCursor);
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

    @Override
    public int inFlight() {
        return inFlight;
    }

    @Override
    public boolean hasRoomFor(ScatterGather sg) {
        return numFree >= (useIndirect(sg.count()) ? 1 : sg.count());
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
        // Every buffer in flight holds at least one slot, so a free slot means a free id.
        int head = nextAvail;
        int id = inOrder ? head : freeIds[--freeIdCount];
        long writable = 0;
        int headFlags;
        if (indirect) {
            long tableOffset = (long) id * indirectMaxElements * DESC_SIZE;
            for (int i = 0; i < elements; i++) {
                boolean w = sg.isWritable(i);
                PackedDescriptors.indirectWrite(indirectTables, tableOffset, i, sg.addr(i), sg.len(i),
                        w ? DESC_F_WRITE : 0);
                if (w) {
                    writable += Integer.toUnsignedLong(sg.len(i));
                }
            }
            PackedDescriptors.write(desc, head, indirectTablesGuestAddr + tableOffset, elements * DESC_SIZE, id);
            headFlags = DESC_F_INDIRECT | PackedLayout.availBits(availWrap);
            if (++nextAvail == size) {
                nextAvail = 0;
                availWrap = !availWrap;
            }
        } else {
            int slot = head;
            boolean wrap = availWrap;
            headFlags = 0;
            for (int i = 0; i < elements; i++) {
                boolean more = i + 1 < elements;
                boolean w = sg.isWritable(i);
                // Each descriptor carries the AVAIL/USED bits of the lap its own slot is in.
                int flags = (w ? DESC_F_WRITE : 0) | (more ? DESC_F_NEXT : 0) | PackedLayout.availBits(wrap);
                PackedDescriptors.write(desc, slot, sg.addr(i), sg.len(i), more ? 0 : id);
                if (i == 0) {
                    headFlags = flags;
                } else {
                    // Plain: the device cannot reach this slot before it has seen the head, stored after it.
                    PackedDescriptors.flagsPlain(desc, slot, flags);
                }
                if (w) {
                    writable += Integer.toUnsignedLong(sg.len(i));
                }
                if (++slot == size) {
                    slot = 0;
                    wrap = !wrap;
                }
            }
            nextAvail = slot;
            availWrap = wrap;
        }
        numFree -= needed;
        inFlight++;
        tokens[id] = token;
        slotCount[id] = needed;
        writableBytes[id] = writable;
        headSeq[id] = availSeq;
        availSeq += needed;
        slotsSinceKick = Math.min(size, slotsSinceKick + needed);
        counters.buffers++;

        if (publication == AvailPublication.EAGER) {
            publishHead(head, headFlags);
            return;
        }
        if (heldSlot < 0) {
            heldSlot = head;
            heldFlags = headFlags;
        } else {
            // Plain: the held-back head before this one hides it from the device until that head's release.
            PackedDescriptors.flagsPlain(desc, head, headFlags);
        }
        if (publication == AvailPublication.ADAPTIVE && ++sincePublish >= adaptiveInterval) {
            publishHeld();
        }
    }

    @Override
    public void publish() {
        checkNotBroken();
        if (heldSlot >= 0) {
            publishHeld();
        }
    }

    private void publishHeld() {
        int slot = heldSlot;
        heldSlot = -1;
        publishHead(slot, heldFlags);
    }

    /** Stores a head's flags with release: every buffer written so far becomes visible to the device. */
    private void publishHead(int slot, int flags) {
        // wmb (store->store): the descriptors' addr/len/id, the other descriptors' flags of the list, indirect
        // table entries and (LAZY) the later heads stored plainly must all be visible before this flags word,
        // or the device can see the head available and read a stale address, a stale length, or a next slot
        // that does not look available yet and so a list cut short. WEAK: the release store orders them.
        // STRONG: a full fence first, as towards a hardware peer.
        if (strong) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        PackedDescriptors.flagsRelease(desc, slot, flags);
        publishedSeq = availSeq;
        sincePublish = 0;
        counters.availIdxWrites++;
    }

    @Override
    public boolean kickPrepare() {
        checkNotBroken();
        if (heldSlot >= 0) {
            publishHeld();
        }
        int added = slotsSinceKick;
        if (added == 0) {
            return false;
        }
        slotsSinceKick = 0;
        // mb (store->load): the head flags stored above must be visible before we load the device event
        // suppression structure. The device does the mirror image (stores ENABLE or DESC, then loads the flags at
        // its next slot). Without a full fence both loads can pass both stores: we read DISABLE and skip the kick
        // while the device reads the slot as not available and goes to sleep; the buffers then wait for ever.
        Fences.storeLoad();
        // One 32-bit load, so a DESC mode comes with the offset the device wrote with it.
        int word = deviceEvent.wordAcquire();
        int mode = EventSuppression.mode(word);
        boolean needKick = switch (mode) {
            case EVENT_F_ENABLE -> true;
            case EVENT_F_DISABLE -> false;
            case EVENT_F_DESC -> descEventCrossed(EventSuppression.offWrap(word), added);
            default -> throw breakWith(new ReservedEventModeException("deviceEvent.flags", EventSuppression.flags(word),
                    "event suppression mode 3 is reserved"));
        };
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

    /**
     * DESC: whether the {@code added} slots just made available include the one the device asked about. Without
     * EVENT_IDX a DESC mode is out of spec; it is read as ENABLE (as the packed device reads the driver's), since a
     * kick too many costs the device a wake-up while a missed one can hang the queue.
     */
    private boolean descEventCrossed(int offWrap, int added) {
        if (!eventIdx) {
            return true;
        }
        return PackedLayout.needEvent(offWrap, size, (nextAvail - added) & 0xFFFF, nextAvail, availWrap);
    }

    @Override
    public void notifyDevice() {
        counters.kicksSent++;
        kickNotifier.signal();
    }

    @Override
    public boolean kick() {
        if (kickPrepare()) {
            notifyDevice();
            return true;
        }
        return false;
    }

    @Override
    public boolean hasUsed() {
        checkNotBroken();
        return batchLastId >= 0 || usedFlagsAt(nextUsed, usedWrap, usedSeq) >= 0;
    }

    /**
     * The flags of the descriptor at {@code slot} (unwrapped position {@code seq}) when they mark it used for
     * wrap counter {@code wrap}, else -1.
     */
    private int usedFlagsAt(int slot, boolean wrap, int seq) {
        int flags = PackedDescriptors.flagsAcquire(desc, slot);
        counters.usedIdxReads++;
        if (!PackedLayout.isUsed(flags, wrap)) {
            return -1;
        }
        if (seq - publishedSeq >= 0) {
            throw breakWith(new IndexJumpException("desc[" + slot + "].flags", flags,
                    "marks a used descriptor at ring position " + slot + " where no published buffer is outstanding"));
        }
        // rmb: in WEAK mode the acquire load above orders the id and len (and the payload the device wrote)
        // after the flags; STRONG adds a full fence, as a driver does towards a hardware device.
        if (strong) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        return flags;
    }

    /** The id of the used descriptor at {@code slot} (unwrapped position {@code seq}), validated. */
    private int checkedUsedId(int slot, int seq) {
        int id = PackedDescriptors.id(desc, slot);
        if (id >= size) {
            throw breakWith(new InvalidUsedIdException("desc[" + slot + "].id", id,
                    "not below the queue size " + size));
        }
        if (tokens[id] == null) {
            throw breakWith(new InvalidUsedIdException("desc[" + slot + "].id", id, "is not a buffer in flight"));
        }
        if (headSeq[id] - publishedSeq >= 0) {
            throw breakWith(new InvalidUsedIdException("desc[" + slot + "].id", id,
                    "names a buffer that is not published yet"));
        }
        if (inOrder && headSeq[id] - seq < 0) {
            throw breakWith(new InvalidUsedIdException("desc[" + slot + "].id", id,
                    "names a buffer before ring position " + slot + ", against IN_ORDER"));
        }
        return id;
    }

    /** Ring slots that the used descriptor for {@code id}, found at unwrapped position {@code seq}, completes. */
    private int usedSpan(int id, int seq) {
        // IN_ORDER: one used descriptor may stand for every buffer from seq up to and including id's.
        return inOrder ? headSeq[id] - seq + slotCount[id] : slotCount[id];
    }

    /** The written length of a used descriptor: its len only when WRITE says the device wrote, else 0. */
    private long checkedUsedLen(int slot, int flags, int id) {
        if ((flags & DESC_F_WRITE) == 0) {
            return 0;
        }
        long len = PackedDescriptors.len(desc, slot);
        if (len > writableBytes[id]) {
            throw breakWith(new UsedLengthTooLargeException("desc[" + slot + "].len", len,
                    "exceeds the " + writableBytes[id] + " writable bytes of buffer " + id));
        }
        return len;
    }

    @Override
    public Object pollUsed() {
        checkNotBroken();
        if (batchLastId < 0) {
            int flags = usedFlagsAt(nextUsed, usedWrap, usedSeq);
            if (flags < 0) {
                return null;
            }
            int id = checkedUsedId(nextUsed, usedSeq);
            long len = checkedUsedLen(nextUsed, flags, id);
            int span = usedSpan(id, usedSeq);
            if (!inOrder) {
                advanceUsed(span);
                return reap(id, len);
            }
            batchLastId = id;
            batchLastLen = len;
            reapSlot = nextUsed;
            advanceUsed(span);
        }
        // IN_ORDER: hand out the batch oldest first; a buffer's id is its first slot. Skipped buffers count as
        // fully used (3.7), the last one has the length the device reported.
        int id = reapSlot;
        long len;
        if (id == batchLastId) {
            len = batchLastLen;
            batchLastId = -1;
        } else {
            len = writableBytes[id];
        }
        reapSlot += slotCount[id];
        if (reapSlot >= size) {
            reapSlot -= size;
        }
        return reap(id, len);
    }

    private void advanceUsed(int span) {
        usedSeq += span;
        nextUsed += span;
        if (nextUsed >= size) {
            nextUsed -= size;
            usedWrap = !usedWrap;
        }
        if (driverEventMode == EVENT_F_DESC) {
            // Callbacks are on with EVENT_IDX: ask for a notification at the next used position, and (mb,
            // store->load) make that store visible before our next load of the flags there, so the device cannot
            // skip a notification for a descriptor we have not seen yet (the same Dekker pair as in
            // armOrFindPending).
            storeDriverEvent(EVENT_F_DESC, offWrap(nextUsed, usedWrap));
            Fences.storeLoad();
        }
    }

    private Object reap(int id, long len) {
        lastUsedLength = len;
        counters.completions++;
        return release(id);
    }

    /** Frees the buffer with this id and returns its token. */
    private Object release(int id) {
        Object token = tokens[id];
        tokens[id] = null;
        numFree += slotCount[id];
        inFlight--;
        if (!inOrder) {
            freeIds[freeIdCount++] = id;
        }
        return token;
    }

    @Override
    public long lastUsedLength() {
        return lastUsedLength;
    }

    private static int offWrap(int slot, boolean wrap) {
        return slot | (wrap ? EVENT_WRAP_BIT : 0);
    }

    private void storeDriverEvent(int mode, int offWrap) {
        driverEventMode = mode;
        driverEventOffWrap = offWrap;
        // One 32-bit store, so the device never pairs a DESC mode with a stale offset.
        driverEvent.release(offWrap, mode);
    }

    @Override
    public void disableCallbacks() {
        counters.disableCalls++;
        if (driverEventMode != EVENT_F_DISABLE) {
            storeDriverEvent(EVENT_F_DISABLE, driverEventOffWrap);
        }
    }

    @Override
    public boolean enableCallbacksOrFindPending() {
        checkNotBroken();
        counters.enableCalls++;
        return armOrFindPending(0);
    }

    /**
     * With EVENT_IDX asks for a notification at the slot 3/4 of the outstanding published slots ahead of the next
     * used position; without it this is {@link #enableCallbacksOrFindPending()}.
     */
    @Override
    public boolean enableCallbacksDelayedOrFindPending() {
        checkNotBroken();
        counters.enableCalls++;
        return armOrFindPending(eventIdx ? (publishedSeq - usedSeq) * 3 / 4 : 0);
    }

    /**
     * Enables used-buffer notifications for the slot {@code ahead} slots past the next used position, then
     * returns whether the device has already gone past it (no notification will come: reap instead of sleeping).
     */
    private boolean armOrFindPending(int ahead) {
        if (eventIdx) {
            int slot = nextUsed + ahead;
            boolean wrap = usedWrap;
            if (slot >= size) {
                slot -= size;
                wrap = !wrap;
            }
            storeDriverEvent(EVENT_F_DESC, offWrap(slot, wrap));
        } else {
            storeDriverEvent(EVENT_F_ENABLE, driverEventOffWrap);
        }
        // mb (store->load): the driver event store must be visible before we re-read the used descriptors. The
        // device marks a descriptor used, then loads the driver event; without the fence it can read the old
        // DISABLE while we read the old flags, and we sleep with a used buffer and no notification coming.
        Fences.storeLoad();
        return batchLastId >= 0 || usedBeyond(ahead);
    }

    /**
     * Whether the device's used position is more than {@code ahead} slots past ours, found by walking its used
     * descriptors without reaping them. Looking only at the target slot (as Linux does) could miss: a used list
     * of several slots covers the target slot without writing a used descriptor there.
     */
    private boolean usedBeyond(int ahead) {
        int slot = nextUsed;
        boolean wrap = usedWrap;
        int seq = usedSeq;
        while (seq - usedSeq <= ahead) {
            if (usedFlagsAt(slot, wrap, seq) < 0) {
                return false;
            }
            int span = usedSpan(checkedUsedId(slot, seq), seq);
            seq += span;
            slot += span;
            if (slot >= size) {
                slot -= size;
                wrap = !wrap;
            }
        }
        return true;
    }
}
