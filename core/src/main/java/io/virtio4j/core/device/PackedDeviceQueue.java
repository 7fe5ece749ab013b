package io.virtio4j.core.device;

import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.error.ChainTooLargeException;
import io.virtio4j.core.error.ChainTooLongException;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.error.ForgedUsedFlagsException;
import io.virtio4j.core.error.IncompleteListException;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.IndirectNotNegotiatedException;
import io.virtio4j.core.error.IndirectWithNextException;
import io.virtio4j.core.error.InvalidDescriptorIndexException;
import io.virtio4j.core.error.InvalidIndirectTableException;
import io.virtio4j.core.error.InvalidQueueStateException;
import io.virtio4j.core.error.NestedIndirectException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.ReadableAfterWritableException;
import io.virtio4j.core.error.ReservedEventModeException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.ZeroLengthElementException;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.ordering.Fences;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.stats.QueueCounters;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

import static io.virtio4j.core.layout.PackedLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;
import static io.virtio4j.core.layout.PackedLayout.DESC_SIZE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DESC;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DISABLE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_ENABLE;

/**
 * Device side of a packed virtqueue (virtqueue.md 3.6): pops available buffers from the descriptor ring, writes
 * used descriptors back into it, publishes them in batches and decides used-buffer notifications from the driver
 * event suppression structure; controls kicks through the device event suppression structure.
 *
 * <p>Single-threaded: one thread owns a device queue. Everything the driver wrote is hostile input: each check
 * raises a specific {@link RingViolationException} naming the field ({@code desc[<slot>].flags},
 * {@code desc[<slot>].id}, {@code indirect[<i>].addr}, {@code driverEvent.flags}, ...) and the value, breaks this
 * queue (later calls throw {@link QueueBrokenException}) and consumes nothing; nothing outside the ring areas and
 * the {@link GuestMemory} is touched, every element going through an explicit range check.
 *
 * <p>Positions: the next slot to pop ({@code nextAvail}, wrap counter {@code availWrap}) and the next slot to
 * write a used descriptor to ({@code nextUsed}, {@code usedWrap}); each wrap counter starts at 1 and flips each
 * time its position passes the ring's end. Buffers are named by the id the driver put in the last descriptor of
 * the list; per id this side records that it is in flight, how many ring slots its list took (the used position
 * advances by that many) and its writable bytes. At most {@code size} slots are ever outstanding (popped, not yet
 * written back as used): a driver that makes more available overwrote slots the device had not given back.
 *
 * <p>What a "read" of the available side is, for the counters: {@code availIdxReads} counts the loads of the
 * flags of the next slot (the packed ring's only availability signal, the equivalent of a split
 * {@code avail.idx} load), {@code usedIdxWrites} counts used publications (release stores of a batch's first
 * used flags).
 *
 * <p>Two lessons carried over from split rings and DPDK:
 * <ul>
 *   <li><b>Cached availability on enable</b> ({@link DeviceOptions#cachedAvailOnEnable()}): in a split ring the
 *   {@code avail.idx} read by {@link #enableKicksOrFindPending()} becomes the cached index. The packed translation:
 *   the flags of the next slot that the re-check loads, when they show a buffer available, are kept, and the next
 *   {@link #pop()} starts from them instead of loading that slot's flags again. Only those flags are kept (never
 *   the descriptor's other fields, which pop reads as usual, ordered by the re-check's acquire load), and they are
 *   forgotten by {@link #unpop} and {@link #restart}.</li>
 *   <li><b>Batched availability</b>: when the next slot is the first of a 64-byte cache line (4 descriptors, with
 *   the whole line in the ring), pop loads the four slots' flags and then takes one acquire fence (DPDK's batched
 *   dequeue does the same), which orders every later load of those descriptors after the flag loads whatever order
 *   the driver published the four in. When all four are available single-descriptor buffers (no NEXT, no
 *   INDIRECT), their flags are kept and the next four pops read none; otherwise pop loads the next slot alone, as
 *   without the batch. On the used side no separate batch path is needed: every used descriptor
 *   of a batch but the first is stored plainly and the first one's flags are stored last, with one release, so
 *   four (or any number of) pushes publish once.</li>
 * </ul>
 *
 * <p>VIRTIO_F_IN_ORDER ({@link DeviceOptions#inOrder()}, virtqueue.md 3.7): this device must push buffers in the
 * order it popped them ({@link IllegalStateException} otherwise: a bug of the device using this queue). A run of
 * pushed buffers that each wrote their whole writable part (or have none), followed by any one buffer, becomes a
 * single used descriptor carrying the run's last id and that buffer's length, and the used position skips the
 * run's total slot count; the driver takes the skipped buffers as fully used. The spec fixes nothing about packed
 * buffer ids under IN_ORDER (only descriptors are used in order), so the driver is held to the same checks as
 * without it, nothing more.
 */
public final class PackedDeviceQueue implements DeviceQueue {
    /**
     * Descriptors per 64-byte cache line: the width of the batched availability check (slot 4k starts a line when
     * the ring is 64-byte aligned, as {@link PackedRingAreas#carve} and guests lay it out; correctness does not
     * depend on it).
     */
    private static final int BATCH = 4;

    private final int size;
    private final MemorySegment ring;
    private final EventSuppression driverEvent;
    private final EventSuppression deviceEvent;
    /** Dirty logging of this queue's ring writes (vhost-user migration), or null: one null check on the hot path. */
    private DirtyLog log;
    /** Guest-physical addresses of the descriptor ring and the device event area, where their writes are logged. */
    private long descLogAddr;
    private long eventLogAddr;
    private final GuestMemory memory;
    private final Notifier callNotifier;
    private final boolean strong;
    private final boolean eventIdx;
    private final boolean indirectDesc;
    private final boolean cachedAvailOnEnable;
    private final boolean inOrder;

    private final DescriptorChain chain;
    /** Per buffer id: popped and not yet pushed. */
    private final boolean[] inFlight;
    /** Per buffer id: ring slots its list took. */
    private final int[] idSlots;
    private final long[] idWritable;
    /** Per buffer id: the line position (see {@link #line}) of its first slot, where unpop goes back to. */
    private final int[] idStart;
    /** Per buffer id: its pop sequence number, which says which buffer was popped last and the IN_ORDER order. */
    private final long[] idSeq;
    /** Sequence number of the next pop; of the next push under IN_ORDER. */
    private long popSeq;
    private long pushSeq;

    private int nextAvail;
    private boolean availWrap;
    private int nextUsed;
    private boolean usedWrap;

    /**
     * Flags of the slots from nextAvail on that are known available (read by the batched check or by the re-check
     * of enableKicksOrFindPending): the next pops take them from here instead of loading them.
     */
    private final int[] knownFlags = new int[BATCH];
    private int knownNext;
    private int knownCount;

    /** Slot whose used flags are held back until publishUsed, or -1 when everything written is published. */
    private int heldSlot = -1;
    private int heldFlags;
    /** Line position just past the last published used descriptor. */
    private int publishedLine;
    /** IN_ORDER: buffers pushed whole, not yet written: their total slots, the last one's id and written bytes. */
    private int runSlots;
    private int runId;
    private int runLen;

    /**
     * Slots published since the last notification decision. A count, not a position: publishUsed may run many
     * times between decisions, and positions repeat every two laps, which is as little as two slots.
     */
    private int undecidedSlots;
    /** Whether there was a notification decision since the (re)start. */
    private boolean decidedValid;
    private boolean kicksEnabled;

    /** Inflight tracking, or null when no region is attached (then the hot path pays one null check). */
    private PackedInflight inflight;
    /** Buffers recovered from the inflight region and not yet popped; pop takes them before the ring. */
    private int resubmitLeft;
    /** Whether the walk in progress reads a resubmitted buffer's copies (for the error fields). */
    private boolean walkingCopies;

    private final QueueCounters counters = new QueueCounters();
    private RingViolationException broken;

    public PackedDeviceQueue(PackedRingAreas areas, GuestMemory memory, DeviceOptions options, Notifier callNotifier) {
        this.size = areas.queueSize();
        this.ring = areas.descRing();
        this.driverEvent = new EventSuppression(areas.driverEvent());
        this.deviceEvent = new EventSuppression(areas.deviceEvent());
        this.memory = memory;
        this.callNotifier = callNotifier;
        this.strong = options.ordering() == Ordering.STRONG;
        this.eventIdx = options.eventIdx();
        this.indirectDesc = options.indirectDesc();
        this.cachedAvailOnEnable = options.cachedAvailOnEnable();
        this.inOrder = options.inOrder();
        this.chain = new DescriptorChain(size);
        this.inFlight = new boolean[size];
        this.idSlots = new int[size];
        this.idWritable = new long[size];
        this.idStart = new int[size];
        this.idSeq = new long[size];
        kicksEnabled = true;
        resume(QueueState.INITIAL);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Packed: the used position is the region's (a fresh region takes {@code state}'s, and the available position
     * is then that too, whatever {@code state} says of it): the last one committed,
     * or, when the back-end died between publishing a batch in the ring and committing it, the batch's end if the
     * ring shows it published (see {@link PackedInflight}). It is the position the driver saw, which is what QEMU
     * sends after a disconnect. The available position is that plus the slots of the resubmitted buffers: every
     * slot between the two belonged to a buffer taken and not returned. Resubmitted buffers are rebuilt from the
     * region's copies of their descriptors (their ring slots may hold used descriptors by now) and walked with
     * every check of a pop.
     */
    @Override
    public int restart(QueueState state, MemorySegment inflightRegion) {
        InflightRegions.checkSize(inflightRegion, io.virtio4j.core.layout.RingFormat.PACKED, size);
        restart(state);
        PackedInflight tracker;
        try {
            tracker = PackedInflight.recover(inflightRegion, size, ring, state.nextUsed(), state.usedWrap());
        } catch (RingViolationException e) {
            throw breakWith(e);
        }
        int used = line(tracker.usedIdx(), tracker.usedWrap());
        int slots = tracker.resubmittedSlots();
        int avail = advance(used, slots);
        // The slots between the used and the available position are the resubmitted buffers': the dead back-end
        // may have written used descriptors over them (in a batch only the first one's flags wait for the
        // publication; the others are stored at push time) and died before publishing, so the batch was rolled
        // back. The driver waits at the used position and will read on from the slot its first new used
        // descriptor ends at: if that one covers other slots than the dead batch's first did, the driver would land
        // on a stale used descriptor and reap a buffer this back-end has not done. So every one of those slots gets
        // the available pattern of its lap back (AVAIL = wrap, USED = !wrap: what the driver wrote there), before
        // anything is published. Plain stores: the driver reads none of these slots before the device publishes
        // at the used position, and the release store of that first publication orders them before it; a crash
        // before it leaves slots that still look available, which is what recovery's commit test expects of the
        // slot at the committed position (a rollback, as it would be anyway).
        for (int k = 0; k < slots; k++) {
            int at = advance(used, k);
            int flags = PackedDescriptors.flagsPlainLoad(ring, slotOf(at));
            PackedDescriptors.flagsPlain(ring, slotOf(at), flags & ~(PackedLayout.DESC_F_AVAIL
                    | PackedLayout.DESC_F_USED) | PackedLayout.availBits(wrapOf(at)));
        }
        if (log != null) {
            logSlots(used, avail); // guest memory written: logged like a publication's slots (logUsed came first)
        }
        resume(new QueueState(slotOf(avail), wrapOf(avail), slotOf(used), wrapOf(used)));
        inflight = tracker;
        resubmitLeft = tracker.resubmitCount();
        return resubmitLeft;
    }

    @Override
    public int size() {
        return size;
    }

    /**
     * Where the queue stands: the next slot to pop and the next slot a used descriptor goes to, each with its wrap
     * counter. A new queue stands at {@link QueueState#INITIAL}: a packed ring starts zero-filled at slot 0 with
     * both wrap counters 1, and nothing in the ring says otherwise.
     */
    @Override
    public QueueState state() {
        if (heldSlot >= 0 || runSlots > 0) {
            if (broken == null) {
                throw new IllegalStateException("used descriptors pushed but not published: publishUsed() first");
            }
            // Broken: nothing more will be published, so the driver has seen what it will see.
            return new QueueState(nextAvail, availWrap, slotOf(publishedLine), wrapOf(publishedLine));
        }
        return new QueueState(nextAvail, availWrap, nextUsed, usedWrap);
    }

    /**
     * Resumes at {@code state}: both positions below the size, and the slots outstanding between them (the
     * distance from the used position to the available one on the line of two laps) at most the size.
     */
    @Override
    public void restart(QueueState state) {
        broken = null;
        if (state.nextAvail() >= size) {
            throw breakWith(new InvalidQueueStateException("nextAvail", state.nextAvail(),
                    "is not below the queue size " + size));
        }
        if (state.nextUsed() >= size) {
            throw breakWith(new InvalidQueueStateException("nextUsed", state.nextUsed(),
                    "is not below the queue size " + size));
        }
        int outstanding = distance(line(state.nextUsed(), state.usedWrap()),
                line(state.nextAvail(), state.availWrap()));
        if (outstanding > size) {
            throw breakWith(new InvalidQueueStateException("nextUsed", state.nextUsed(), "with used wrap counter "
                    + (state.usedWrap() ? 1 : 0) + " leaves " + outstanding + " slots outstanding before "
                    + state.nextAvail() + " (wrap " + (state.availWrap() ? 1 : 0) + "), more than the queue size "
                    + size));
        }
        resume(state);
    }

    private void resume(QueueState state) {
        nextAvail = state.nextAvail();
        availWrap = state.availWrap();
        nextUsed = state.nextUsed();
        usedWrap = state.usedWrap();
        publishedLine = line(nextUsed, usedWrap);
        undecidedSlots = 0;
        decidedValid = false;
        heldSlot = -1;
        runSlots = 0;
        knownCount = 0;
        popSeq = pushSeq = 0;
        inflight = null;
        resubmitLeft = 0;
        // The driver may have rewritten the device event area meanwhile (a reset zeroes it): store the next disable.
        kicksEnabled = true;
        Arrays.fill(inFlight, false);
    }

    @Override
    public QueueCounters counters() {
        return counters;
    }

    @Override
    public boolean isBroken() {
        return broken != null;
    }

    @Override
    public RingViolationException violation() {
        return broken;
    }

    @Override
    public void fail(RingViolationException cause) {
        if (broken == null) {
            breakWith(cause);
        }
    }

    private void checkNotBroken() {
        if (broken != null) {
            throw new QueueBrokenException("device queue", broken);
        }
    }

    private RingViolationException breakWith(RingViolationException e) {
        broken = e;
        counters.errors++;
        return e;
    }

    // ---- positions: slot + wrap counter, or one "line" number in [0, 2 * size) that orders two laps ----

    private int line(int slot, boolean wrap) {
        return wrap ? slot : slot + size;
    }

    private int slotOf(int line) {
        return line < size ? line : line - size;
    }

    private boolean wrapOf(int line) {
        return line < size;
    }

    private int advance(int line, int slots) {
        int l = line + slots;
        return l >= 2 * size ? l - 2 * size : l;
    }

    /** Slots from line position {@code from} forward to {@code to}, in [0, 2 * size). */
    private int distance(int from, int to) {
        int d = to - from;
        return d < 0 ? d + 2 * size : d;
    }

    // ---- available side ----

    @Override
    public DescriptorChain pop() {
        checkNotBroken();
        int flags;
        if (knownCount > 0) {
            flags = knownFlags[knownNext];
        } else {
            if (resubmitLeft > 0) {
                return popResubmitted();
            }
            flags = loadNextFlags();
            if (!PackedLayout.isAvailable(flags, availWrap)) {
                return null;
            }
        }
        return popNext(flags);
    }

    /**
     * Pops the buffer at the next slot, whose flags {@code flags} show it available. Apart from {@link #pop} for the
     * JIT: C2 weighs a call site by how often it ran per call of the method that holds it, and a polling device calls
     * pop far more often on an empty ring than it pops (millions of times while a driver is still starting up); with
     * this work inside pop, its callees looked rare there ("low call site frequency") and were left as calls,
     * depending on how long the ring had been empty when pop was compiled. Here every call pops.
     */
    private DescriptorChain popNext(int flags) {
        int start = line(nextAvail, availWrap);
        int end = walkOrSingle(flags);
        int id = chain.head();
        int slots = distance(start, end);
        // The used position trails the available one by the slots outstanding; a correct driver never has more
        // than the ring in use, since it reuses a slot only after reaping the used descriptor written over it.
        int outstanding = distance(line(nextUsed, usedWrap), start);
        if (outstanding + slots > size) {
            throw breakWith(new IndexJumpException(field(false, nextAvail, "flags"), flags, "buffer " + id + " of "
                    + slots + " slots made available with " + outstanding
                    + " slots not yet used: more than the queue size " + size + " outstanding"));
        }
        if (knownCount > 0) {
            knownNext++;
            knownCount--;
        }
        inFlight[id] = true;
        idSlots[id] = slots;
        idWritable[id] = chain.writableBytes();
        idStart[id] = start;
        if (inflight != null && !inflight.fetched(id, ring, nextAvail, slots)) {
            throw breakWith(new IndexJumpException(field(false, nextAvail, "flags"), flags, "buffer " + id + " of "
                    + slots + " slots made available while the inflight region holds fewer free entries: slots"
                    + " reused before they were seen used"));
        }
        idSeq[id] = popSeq++;
        nextAvail = slotOf(end);
        availWrap = wrapOf(end);
        counters.buffers++;
        return chain;
    }

    /**
     * Pops the next buffer recovered from the inflight region: its copies laid out in a scratch ring, walked with
     * every check of a ring pop; it stays marked in flight in the region.
     */
    private DescriptorChain popResubmitted() {
        MemorySegment copies;
        try {
            copies = inflight.nextResubmitted();
        } catch (RingViolationException e) {
            throw breakWith(e);
        }
        walkingCopies = true;
        try {
            walk(copies, 0, true, PackedDescriptors.flagsPlainLoad(copies, 0));
        } finally {
            walkingCopies = false;
        }
        int id = chain.head();
        inflight.resubmittedPopped(id);
        inFlight[id] = true;
        idSlots[id] = inflight.resubmittedSlots(id);
        idWritable[id] = chain.writableBytes();
        idSeq[id] = popSeq++;
        resubmitLeft--;
        counters.buffers++;
        return chain;
    }

    /**
     * Loads the flags of the next slot with acquire, trying the batched check first when the next slot begins a
     * cache line; rejects the one pattern that can never be there. Counts each acquire load as an availability
     * read.
     */
    private int loadNextFlags() {
        int slot = nextAvail;
        if (slot % BATCH == 0 && slot + BATCH <= size && loadBatch(slot)) {
            return knownFlags[0];
        }
        int flags = PackedDescriptors.flagsAcquire(ring, slot);
        counters.availIdxReads++;
        // rmb: in WEAK mode the acquire load orders the descriptor fields read next (addr, len, id, the following
        // slots of a list) after the flags, so we see what the driver wrote before publishing them; STRONG adds a
        // full fence at this barrier point, only when the flags show the slot available: otherwise no field of it
        // is read (the caller stops), and a busy-polling device would pay a full fence on every empty poll.
        if (strong && PackedLayout.isAvailable(flags, availWrap)) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        checkNotForged(slot, flags);
        return flags;
    }

    /**
     * The batched check (see the class javadoc): the four flags of the line loaded, then one acquire fence. Keeps
     * the four flags and returns true only when all four are available single descriptors.
     */
    private boolean loadBatch(int slot) {
        for (int i = 0; i < BATCH; i++) {
            knownFlags[i] = PackedDescriptors.flagsPlainLoad(ring, slot + i);
        }
        counters.availIdxReads++;
        // Decided on the loaded values alone, before the fence: a line that is not four available singles costs
        // no fence (the single-slot path reads the slot again with its own barrier).
        for (int i = 0; i < BATCH; i++) {
            if (!isSingleAvailable(knownFlags[i])) {
                return false;
            }
        }
        // rmb: the fence orders the four flag loads above before every load of the four descriptors' fields below,
        // as DPDK's batched dequeue does. An acquire load of one slot alone would not do for every driver: an eager
        // driver releases each head in ring order (the line's last covers the rest), but a lazy one stores later
        // heads plainly and releases the first of its batch last (the line's first covers the rest), and a batch
        // boundary can fall inside the line. Whatever the driver's order, each flag we saw available was stored
        // after that descriptor's fields, and the fence keeps our field loads after our flag loads. STRONG: a full
        // fence instead.
        if (strong) {
            VarHandle.fullFence();
            counters.strongFences++;
        } else {
            VarHandle.acquireFence();
        }
        knownNext = 0;
        knownCount = BATCH;
        return true;
    }

    private boolean isSingleAvailable(int flags) {
        return PackedLayout.isAvailable(flags, availWrap) && (flags & (DESC_F_NEXT | DESC_F_INDIRECT)) == 0;
    }

    /**
     * AVAIL = USED = our wrap counter at the next slot: used bits of the lap we are in, which only this device
     * could have written and only behind its available position. Whatever the driver meant (USED bits set by it,
     * or a wrap counter that lies), nothing consistent can follow.
     */
    private void checkNotForged(int slot, int flags) {
        if (PackedLayout.isUsed(flags, availWrap)) {
            throw breakWith(new ForgedUsedFlagsException(field(false, slot, "flags"), flags,
                    "AVAIL and USED both equal the device's wrap counter " + (availWrap ? 1 : 0)
                            + " at the next slot to read"));
        }
    }

    /**
     * {@link #walk} of the descriptor ring from the next slot (flags {@code flags}, known available) for any list; a
     * descriptor without NEXT or INDIRECT (a buffer of one descriptor: what most drivers post for a transmitted
     * frame) is taken here with the same checks, in code small enough for C2 to inline into {@link #pop}: {@link #walk}
     * is far above its inlining limit for hot methods (FreqInlineSize, 325 bytes of bytecode), so it costs a call
     * per buffer.
     */
    private int walkOrSingle(int flags) {
        if ((flags & (DESC_F_NEXT | DESC_F_INDIRECT)) != 0) {
            return walk(ring, nextAvail, availWrap, flags);
        }
        int slot = nextAvail;
        chain.reset(0);
        long addr = PackedDescriptors.addr(ring, slot);
        long lenId = PackedDescriptors.lenId(ring, slot); // len and id in one checked access
        long len = PackedDescriptors.lenOf(lenId);
        checkElementLength(false, slot, len);
        addElement(addr, len, (flags & DESC_F_WRITE) != 0, false, slot);
        chain.setHead(checkedId(slot, lenId));
        return advance(line(slot, availWrap), 1);
    }

    /**
     * Reads the list whose first descriptor is at {@code startSlot} of {@code ring} (flags {@code flags}, already
     * known available) into the chain and sets its id; returns the line position just past the list. Changes no
     * queue state. The ring is the descriptor ring, or the scratch ring a buffer resubmitted from the inflight
     * region is laid out in (then error fields name the region's entries).
     */
    private int walk(MemorySegment ring, int startSlot, boolean startWrap, int flags) {
        chain.reset(0);
        int slot = startSlot;
        boolean wrap = startWrap;
        boolean seenWritable = false;
        int n = 0;
        long lenId; // the last descriptor's holds the buffer id
        while (true) {
            long addr = PackedDescriptors.addr(ring, slot);
            lenId = PackedDescriptors.lenId(ring, slot); // len and id in one checked access
            long len = PackedDescriptors.lenOf(lenId);
            if ((flags & DESC_F_INDIRECT) != 0) {
                if (!indirectDesc) {
                    throw breakWith(new IndirectNotNegotiatedException(field(false, slot, "flags"), flags,
                            "INDIRECT set but VIRTIO_F_INDIRECT_DESC was not negotiated"));
                }
                if (n > 0 || (flags & DESC_F_NEXT) != 0) {
                    throw breakWith(new IndirectWithNextException(field(false, slot, "flags"), flags,
                            "an INDIRECT descriptor inside a NEXT list"));
                }
                walkIndirect(slot, addr, len);
            } else {
                boolean writable = (flags & DESC_F_WRITE) != 0;
                if (!writable && seenWritable) {
                    throw breakWith(new ReadableAfterWritableException(field(false, slot, "flags"), flags,
                            "device-readable descriptor after a device-writable one"));
                }
                seenWritable |= writable;
                checkElementLength(false, slot, len);
                addElement(addr, len, writable, false, slot);
            }
            n++;
            if ((flags & DESC_F_NEXT) == 0) {
                break;
            }
            if (n == size) {
                throw breakWith(new ChainTooLongException(field(false, slot, "flags"), flags,
                        "a list of " + size + " descriptors, the queue size, continues"));
            }
            slot++;
            if (slot == size) {
                slot = 0;
                wrap = !wrap;
            }
            // Plain load: the driver stores a list's later flags (and fields) before it releases the first
            // descriptor's flags, and our acquire load of those (in pop, the batched check or the re-check of
            // enable) orders this load after it. A later slot seen not available is then a lie, not a race.
            flags = PackedDescriptors.flagsPlainLoad(ring, slot);
            if (!PackedLayout.isAvailable(flags, wrap)) {
                throw breakWith(new IncompleteListException(field(false, slot, "flags"), flags,
                        "the list continues into a slot that is not available (wrap counter " + (wrap ? 1 : 0) + ")"));
            }
        }
        chain.setHead(checkedId(slot, lenId));
        return advance(line(slot, wrap), 1);
    }

    /** The buffer id in the len/id word of a list's last descriptor at {@code slot}: below the size, not in flight. */
    private int checkedId(int slot, long lenId) {
        int id = PackedDescriptors.idOf(lenId);
        if (id >= size) {
            throw breakWith(new InvalidDescriptorIndexException(field(false, slot, "id"), id,
                    "buffer id is not below the queue size " + size));
        }
        if (inFlight[id]) {
            throw breakWith(new InvalidDescriptorIndexException(field(false, slot, "id"), id,
                    "buffer id is already in flight (made available twice)"));
        }
        return id;
    }

    /** The indirect table of the descriptor at {@code slot}: {@code len / 16} packed descriptors in a row. */
    private void walkIndirect(int slot, long addr, long len) {
        if (len == 0 || len % DESC_SIZE != 0) {
            throw breakWith(new InvalidIndirectTableException(field(false, slot, "len"), len,
                    "indirect table length must be a non-zero multiple of " + DESC_SIZE));
        }
        if (len / DESC_SIZE > size) {
            throw breakWith(new ChainTooLongException(field(false, slot, "len"), len,
                    "indirect table of " + len / DESC_SIZE + " descriptors exceeds the queue size " + size));
        }
        int tr = translate(addr, len, false, slot);
        MemorySegment table = memory.region(tr);
        long base = memory.offsetIn(tr, addr);
        int count = (int) (len / DESC_SIZE);
        boolean seenWritable = false;
        for (int i = 0; i < count; i++) {
            // Inside the table only WRITE means something; NEXT and the id are reserved and ignored.
            int flags = PackedDescriptors.indirectFlags(table, base, i);
            long a = PackedDescriptors.indirectAddr(table, base, i);
            long l = PackedDescriptors.indirectLen(table, base, i);
            if ((flags & DESC_F_INDIRECT) != 0) {
                throw breakWith(new NestedIndirectException(field(true, i, "flags"), flags,
                        "INDIRECT descriptor inside an indirect table"));
            }
            boolean writable = (flags & DESC_F_WRITE) != 0;
            if (!writable && seenWritable) {
                throw breakWith(new ReadableAfterWritableException(field(true, i, "flags"), flags,
                        "device-readable descriptor after a device-writable one"));
            }
            seenWritable |= writable;
            checkElementLength(true, i, l);
            addElement(a, l, writable, true, i);
        }
    }

    /**
     * Zero-length elements are refused and a buffer is at most 2^32 bytes, as for split (see
     * {@link SplitDeviceQueue}'s class comment): checked before the translation, so the length is what is named.
     */
    private void checkElementLength(boolean inIndirect, int idx, long len) {
        if (len == 0) {
            throw breakWith(new ZeroLengthElementException(field(inIndirect, idx, "len"), len,
                    "zero-length buffer element"));
        }
        long total = chain.readableBytes() + chain.writableBytes() + len;
        if (total > DescriptorChain.MAX_BYTES) {
            throw breakWith(new ChainTooLargeException(field(inIndirect, idx, "len"), len,
                    "brings the buffer's total length to " + total + " bytes, more than 2^32"));
        }
    }

    /**
     * Adds the element to the chain, split where it crosses into an adjacent region (see {@link DescriptorChain});
     * breaks the queue when a byte of it is in no region or the pieces overflow the chain's capacity.
     */
    private void addElement(long addr, long len, boolean writable, boolean inIndirect, int idx) {
        int result = chain.addGuest(memory, addr, len, writable);
        if (result != DescriptorChain.ADDED) {
            throw breakWith(chain.addFailure(result, memory, addr, len, field(inIndirect, idx, "addr")));
        }
    }

    /** Region holding the element; the error's field name is built only when the check fails. */
    private int translate(long addr, long len, boolean inIndirect, int idx) {
        int r = memory.find(addr, len);
        if (r < 0) {
            try {
                memory.require(addr, len, field(inIndirect, idx, "addr"));
            } catch (AddressOutOfRangeException e) {
                throw breakWith(e);
            }
        }
        return r;
    }

    /** Field name for errors; built only on the error path. */
    private String field(boolean indirect, int idx, String name) {
        if (walkingCopies && !indirect) {
            return "inflight.desc[" + inflight.scratchEntry(idx) + "]." + name;
        }
        return (indirect ? "indirect[" : "desc[") + idx + "]." + name;
    }

    /**
     * Gives back the buffer popped last: the next pop reads its slots again. The flags known from a batched check
     * or a re-check are forgotten, since they were of the slots after it.
     */
    @Override
    public void unpop(int id) {
        if (id < 0 || id >= size || !inFlight[id] || idSeq[id] != popSeq - 1) {
            throw new IllegalStateException("id " + id + " is not the buffer popped last");
        }
        inFlight[id] = false;
        popSeq--;
        counters.buffers--;
        if (inflight != null) {
            if (inflight.isResubmitted(id)) {
                // Back to the resubmit list (every ring pop after it was given back first); nextAvail stays.
                inflight.resubmittedUnpopped(id);
                resubmitLeft++;
                knownCount = 0;
                return;
            }
            inflight.unfetched(id);
        }
        nextAvail = slotOf(idStart[id]);
        availWrap = wrapOf(idStart[id]);
        knownCount = 0;
    }

    // ---- used side ----

    @Override
    public void pushUsed(int id, long writtenBytes) {
        checkNotBroken();
        if (id < 0 || id >= size || !inFlight[id]) {
            throw new IllegalStateException("id " + id + " is not a buffer popped from this queue and not yet pushed");
        }
        long most = Math.min(idWritable[id], DescriptorChain.MAX_WRITTEN);
        if (writtenBytes < 0 || writtenBytes > most) {
            throw new IllegalArgumentException("written bytes " + writtenBytes + " outside [0, " + most + "] for id "
                    + id + " (its writable part is " + idWritable[id] + " bytes; a used length is 32 bits)");
        }
        if (inOrder) {
            if (idSeq[id] != pushSeq) {
                throw new IllegalStateException("id " + id + " pushed out of pop order under VIRTIO_F_IN_ORDER");
            }
            pushSeq++;
        }
        inFlight[id] = false;
        counters.completions++;
        if (inflight != null) {
            inflight.pushed(id);
        }
        if (inOrder && writtenBytes == idWritable[id]) {
            // Whole: the driver may take it as used without an entry of its own (virtqueue.md 3.7). Held as part
            // of a run; the run's last buffer gets the entry, written when a partial one ends the run or at publish.
            runSlots += idSlots[id];
            runId = id;
            runLen = (int) writtenBytes;
            return;
        }
        writeUsed(id, (int) writtenBytes, runSlots + idSlots[id]);
        runSlots = 0;
    }

    /**
     * Writes one used descriptor at nextUsed standing for {@code slots} slots. The first one after a publication
     * keeps its flags back (stored last, with release, by publishUsed); later ones are stored plainly now: the
     * driver reads a slot only after the one before it, and the release of the first orders all of them.
     */
    private void writeUsed(int id, int len, int slots) {
        // len is the unsigned 32-bit length: from 2 GiB up it is negative as an int, and still written
        int flags = PackedLayout.usedBits(usedWrap) | (len != 0 ? DESC_F_WRITE : 0);
        PackedDescriptors.writeUsed(ring, nextUsed, id, len);
        if (heldSlot < 0) {
            heldSlot = nextUsed;
            heldFlags = flags;
        } else {
            PackedDescriptors.flagsPlain(ring, nextUsed, flags);
        }
        int next = advance(line(nextUsed, usedWrap), slots);
        nextUsed = slotOf(next);
        usedWrap = wrapOf(next);
    }

    /** Publishes every used descriptor pushed so far with one release store of the first one's flags. */
    @Override
    public void publishUsed() {
        if (runSlots > 0) {
            writeUsed(runId, runLen, runSlots);
            runSlots = 0;
        }
        if (heldSlot < 0) {
            return;
        }
        // wmb (store->store): the used descriptors' id/len, the later ones' flags and the payload written into the
        // buffers must be visible before the first one's flags, or the driver, which polls that slot, reads a
        // stale id/len, stale data or a later slot not yet marked used. WEAK: the release store orders them;
        // STRONG: a full fence first.
        if (strong) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        PackedDescriptors.flagsRelease(ring, heldSlot, heldFlags);
        heldSlot = -1;
        if (inflight != null) {
            inflight.published();
        }
        int line = line(nextUsed, usedWrap);
        if (log != null) {
            logSlots(publishedLine, line);
        }
        undecidedSlots = Math.min(size, undecidedSlots + distance(publishedLine, line));
        publishedLine = line;
        counters.usedIdxWrites++;
    }

    /**
     * Whether the driver wants a notification for the used descriptors published since the last decision, from
     * the driver event suppression word: ENABLE yes, DISABLE no, DESC (with EVENT_IDX) whether the position it
     * names lies among those just published. Without EVENT_IDX a DESC mode is out of spec; it is read as ENABLE,
     * since an extra notification costs the driver a wake-up while a missed one can hang it. The reserved mode 3
     * is a violation. The first decision after a (re)start always notifies (the word is still read and checked):
     * the driver may have set its suppression for a ring position this queue does not know, as for split.
     */
    @Override
    public boolean needNotify() {
        // mb (store->load): our used flags store must be visible before we load the driver's event suppression.
        // The driver stores its suppression (ENABLE or DESC) then re-reads the next used slot; without a full
        // fence both loads can pass both stores: we read "disabled" while the driver reads the slot as not yet
        // used and sleeps forever.
        Fences.storeLoad();
        int word = driverEvent.wordAcquire();
        int mode = EventSuppression.mode(word);
        int moved = undecidedSlots;
        boolean valid = decidedValid;
        undecidedSlots = 0;
        decidedValid = true;
        if (mode == PackedLayout.EVENT_F_MODE_MASK) {
            throw breakWith(new ReservedEventModeException("driverEvent.flags", EventSuppression.flags(word),
                    "event suppression mode 3 is reserved"));
        }
        if (!valid) {
            return true;
        }
        return switch (mode) {
            case EVENT_F_DISABLE -> false;
            case EVENT_F_DESC -> !eventIdx || descEvent(EventSuppression.offWrap(word), moved);
            default -> true;
        };
    }

    /**
     * DESC: whether the driver's event position lies among the {@code moved} slots published up to now. After a
     * whole lap or more every position has been passed, whatever wrap counter the driver named: notify.
     */
    private boolean descEvent(int offWrap, int moved) {
        if (moved >= size) {
            return true;
        }
        int newPos = slotOf(publishedLine);
        // On the unwrapped line of PackedLayout.needEvent the old position is simply new - moved (below zero
        // when the batch crossed the ring's end), as Linux's virtqueue_kick_prepare_packed computes it.
        return PackedLayout.needEvent(offWrap, size, (newPos - moved) & 0xFFFF, newPos, wrapOf(publishedLine));
    }

    @Override
    public int flushUsedOutcome() {
        checkNotBroken();
        publishUsed();
        if (undecidedSlots == 0) {
            return FLUSH_NONE;
        }
        if (needNotify()) {
            counters.notificationsSent++;
            callNotifier.signal();
            return FLUSH_NOTIFIED;
        }
        counters.notificationsSuppressed++;
        return FLUSH_SUPPRESSED;
    }

    // ---- kicks ----

    /** Asks the driver not to kick (a hint: it still may): device event suppression DISABLE. */
    @Override
    public void disableKicks() {
        counters.disableCalls++;
        if (!kicksEnabled) {
            return;
        }
        kicksEnabled = false;
        deviceEvent.release(0, EVENT_F_DISABLE);
        if (log != null) {
            logBytes(eventLogAddr, PackedLayout.EVENT_SIZE);
        }
    }

    /**
     * Asks the driver to kick (ENABLE, or with EVENT_IDX DESC naming the next slot to pop and its wrap counter),
     * then re-reads the next slot's flags. With {@code cachedAvailOnEnable} flags found available are kept for the
     * next pop. When flags are already known available (a batch not yet popped), no load is needed: true.
     */
    @Override
    public boolean enableKicksOrFindPending() {
        checkNotBroken();
        counters.enableCalls++;
        kicksEnabled = true;
        if (eventIdx) {
            deviceEvent.release(nextAvail | (availWrap ? PackedLayout.EVENT_WRAP_BIT : 0), EVENT_F_DESC);
        } else {
            deviceEvent.release(0, EVENT_F_ENABLE);
        }
        if (log != null) {
            logBytes(eventLogAddr, PackedLayout.EVENT_SIZE);
        }
        if (knownCount > 0 || resubmitLeft > 0) {
            return true; // flags known available, or buffers recovered from the inflight region wait
        }
        // mb (store->load): the event suppression store must be visible before we re-read the next slot's flags.
        // The driver stores a head's flags then loads our event suppression; without the fence it can read the old
        // DISABLE while we read the slot as not yet available, and we sleep with a buffer available: a lost kick.
        Fences.storeLoad();
        int flags = PackedDescriptors.flagsAcquire(ring, nextAvail);
        counters.availIdxReads++;
        if (strong) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        checkNotForged(nextAvail, flags);
        boolean available = PackedLayout.isAvailable(flags, availWrap);
        if (available && cachedAvailOnEnable) {
            knownFlags[0] = flags;
            knownNext = 0;
            knownCount = 1;
        }
        return available;
    }

    /**
     * Logs the used descriptors this queue writes into the descriptor ring (at guest-physical {@code descGuestAddr})
     * and its device event suppression writes (at {@code usedGuestAddr}) in {@code log} from now on; null stops it.
     */
    @Override
    public void logUsed(DirtyLog log, long usedGuestAddr, long descGuestAddr) {
        this.log = log;
        this.eventLogAddr = usedGuestAddr;
        this.descLogAddr = descGuestAddr;
    }

    /**
     * Marks the ring slots from line {@code from} to line {@code to} (the descriptors of a publication, round the
     * ring if they wrap; all of it when a whole lap was published). A log too small breaks the queue.
     */
    private void logSlots(int from, int to) {
        int n = distance(from, to);
        if (n == 0) {
            return;
        }
        n = Math.min(n, size);
        int first = slotOf(from);
        int head = Math.min(n, size - first);
        logBytes(descLogAddr + (long) PackedLayout.DESC_SIZE * first, (long) PackedLayout.DESC_SIZE * head);
        if (n > head) {
            logBytes(descLogAddr, (long) PackedLayout.DESC_SIZE * (n - head));
        }
    }

    private void logBytes(long gpa, long len) {
        try {
            log.mark(gpa, len);
        } catch (DirtyLogOverflowException e) {
            throw breakWith(e);
        }
    }
}
