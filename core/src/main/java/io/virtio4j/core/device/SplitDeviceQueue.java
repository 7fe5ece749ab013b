package io.virtio4j.core.device;

import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.error.ChainTooLargeException;
import io.virtio4j.core.error.ChainTooLongException;
import io.virtio4j.core.error.DescriptorLoopException;
import io.virtio4j.core.error.InOrderViolationException;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.IndirectNotNegotiatedException;
import io.virtio4j.core.error.IndirectWithNextException;
import io.virtio4j.core.error.InvalidQueueStateException;
import io.virtio4j.core.error.InvalidDescriptorIndexException;
import io.virtio4j.core.error.InvalidIndirectTableException;
import io.virtio4j.core.error.NestedIndirectException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.ReadableAfterWritableException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.ZeroLengthElementException;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.ordering.Fences;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.Notifier;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.stats.QueueCounters;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.virtio4j.core.layout.SplitLayout.AVAIL_F_NO_INTERRUPT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_WRITE;
import static io.virtio4j.core.layout.SplitLayout.DESC_SIZE;
import static io.virtio4j.core.layout.SplitLayout.USED_F_NO_NOTIFY;

/**
 * Device side of a split virtqueue (the role of Linux {@code vhost.c} and of a vhost-user back-end): pops
 * available chains, pushes used elements, publishes them in batches and decides notifications; controls
 * kicks.
 *
 * <p>Single-threaded: one thread owns a device queue. Everything the driver wrote is hostile input: each
 * check raises a specific {@link RingViolationException} naming the field and value and breaks this queue
 * (later calls throw {@link QueueBrokenException}); nothing outside the ring areas and the
 * {@link GuestMemory} is ever touched, because every access goes through bounds-checked segments after an
 * explicit range check.
 *
 * <p>Zero-length elements: refused. A descriptor that is not INDIRECT and has {@code len == 0} breaks the queue
 * with {@link ZeroLengthElementException} naming {@code desc[i].len} (or {@code indirect[i].len}); an INDIRECT
 * descriptor's own length is checked separately (a non-zero multiple of 16). The spec does not forbid such
 * elements, and Linux vhost accepts them, but QEMU and libvhost-user refuse them as a fatal ring error, so no
 * driver that works against the most common devices posts one; refusing costs nothing legitimate and leaves a
 * hostile driver one degenerate case fewer (an element that is translated but holds no byte). The driver side
 * follows the same rule: {@link io.virtio4j.core.driver.ScatterGather} refuses a zero-length element, so our
 * driver never posts what our device would reject. The packed device applies the same rule.
 *
 * <p>VIRTIO_F_IN_ORDER ({@link DeviceOptions#inOrder()}): the driver must hand out descriptors in table order,
 * so each head must be the descriptor after the previous chain's last one (0 for a new queue; any head is taken
 * as the first after {@link #restart}, since the queue state does not say where the driver's descriptors stand),
 * and each link of a chain in the descriptor table must go from {@code x} to {@code x + 1}, the last entry to 0
 * (links inside an indirect table are free). A driver that breaks either rule breaks the queue with
 * {@link InOrderViolationException} naming {@code avail.ring[slot]} or {@code desc[x].next}. The device's own side
 * of the contract is checked too: {@link #pushUsed} must come in pop order, or it throws
 * {@link IllegalStateException}. Used entries are coalesced, always under IN_ORDER: a run of pushed buffers of
 * which each but the last wrote its whole writable part (0 bytes for a read-only buffer counts) goes out as one
 * used entry, with the id and length of the run's last buffer, in the used slot of its first, and used.idx
 * advanced by the run's length (virtio 1.x 2.7.9; the driver counts the skipped buffers as fully used). A buffer
 * written in part ends its run, so no length is ever over-reported. Runs end at every {@link #publishUsed()}.
 */
public final class SplitDeviceQueue implements DeviceQueue {

    private final int size;
    private final int mask;
    private final MemorySegment desc;
    private final AvailRing avail;
    private final UsedRing used;
    private final GuestMemory memory;
    private final Notifier callNotifier;
    private final boolean strong;
    private final boolean eventIdx;
    private final boolean indirectDesc;
    private final boolean cachedAvailOnEnable;
    private final boolean inOrder;

    private final DescriptorChain chain;
    /** Heads popped and not yet pushed, with the writable bytes of each. */
    private final boolean[] inFlight;
    /**
     * The head popped from each avail ring slot, as this side read it: {@link #unpop} checks against it rather
     * than reading the slot again from shared memory, which the driver may have rewritten meanwhile.
     */
    private final int[] poppedHeads;
    private final long[] headWritableBytes;

    private int lastAvail;
    /** Cached copy of avail.idx: chains up to it can be popped without reading shared memory. */
    private int availCache;
    /** Next used.idx value: where the next used element goes. */
    private int usedShadow;
    /** Last value stored to used.idx. */
    private int usedPublished;
    /** usedPublished at the last notification decision: elements published after it still need one. */
    private int usedDecided;
    /** used.idx at the last notification decision, and whether it is meaningful (false after a (re)start). */
    private int signalledUsed;
    private boolean signalledUsedValid;
    private boolean kicksEnabled;
    /** IN_ORDER: the head the next pop must find, or -1 when unknown (after a restart). */
    private int expectedHead;
    /** IN_ORDER: avail index of the next buffer to push; its head is in {@link #poppedHeads}. */
    private int pushCursor;
    /**
     * IN_ORDER: the run of pushed buffers whose used entry is not written yet: its length (it occupies the used
     * slots just before {@code usedShadow}), and the head and written bytes of its last buffer.
     */
    private int runLength;
    private int runHead;
    private long runWritten;

    /** Inflight tracking, or null when no region is attached (then the hot path pays one null check). */
    private SplitInflight inflight;
    /**
     * Heads recovered from the inflight region and not yet popped. They stand at the avail positions from
     * lastAvail on (their heads prefilled in {@link #poppedHeads}), before the ring's own buffers; while any is
     * left, availCache equals lastAvail, so pop's fast path never sees them.
     */
    private int resubmitLeft;

    /** Dirty logging of the used ring (vhost-user migration), or null: then the hot path pays one null check. */
    private DirtyLog log;
    /** The used ring's guest-physical address, where its writes are logged. */
    private long usedLogAddr;

    private final QueueCounters counters = new QueueCounters();
    private RingViolationException broken;

    public SplitDeviceQueue(SplitRingAreas areas, GuestMemory memory, DeviceOptions options, Notifier callNotifier) {
        this.size = areas.queueSize();
        this.mask = size - 1;
        this.desc = areas.descTable();
        this.avail = new AvailRing(areas.availRing(), size);
        this.used = new UsedRing(areas.usedRing(), size);
        this.memory = memory;
        this.callNotifier = callNotifier;
        this.strong = options.ordering() == Ordering.STRONG;
        this.eventIdx = options.eventIdx();
        this.indirectDesc = options.indirectDesc();
        this.cachedAvailOnEnable = options.cachedAvailOnEnable();
        this.inOrder = options.inOrder();
        this.chain = new DescriptorChain(size);
        this.inFlight = new boolean[size];
        this.poppedHeads = new int[size];
        this.headWritableBytes = new long[size];
        kicksEnabled = true;
        usedShadow = usedPublished = usedDecided = used.idxAcquire();
        expectedHead = 0; // a new ring: the driver's first descriptor is 0
    }

    @Override
    public void restart(QueueState state) {
        broken = null;
        int nextAvail = state.nextAvail();
        int nextUsed = state.nextUsed();
        if (((nextAvail - nextUsed) & 0xFFFF) > size) {
            throw breakWith(new InvalidQueueStateException("nextUsed", nextUsed, "is more than the queue size " + size
                    + " behind the next available index " + nextAvail));
        }
        lastAvail = availCache = nextAvail;
        usedShadow = usedPublished = usedDecided = nextUsed;
        signalledUsedValid = false;
        // The driver may have rewritten used.flags meanwhile (a reset zeroes the ring): store the next disable.
        kicksEnabled = true;
        java.util.Arrays.fill(inFlight, false);
        expectedHead = -1;
        pushCursor = nextAvail;
        runLength = 0;
        inflight = null;
        resubmitLeft = 0;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Split: {@code state.nextUsed()} is the used.idx in the ring (what a new queue's {@link #state()} gives):
     * the batch to clear is measured against it and the available position becomes it plus the resubmitted heads,
     * whatever {@code state.nextAvail()} says (after a crash QEMU sends used.idx there), for a fresh region too.
     * Resubmitted heads are walked and checked again when popped, as any chain from the ring.
     */
    @Override
    public int restart(QueueState state, MemorySegment inflightRegion) {
        InflightRegions.checkSize(inflightRegion, io.virtio4j.core.layout.RingFormat.SPLIT, size);
        restart(state);
        int usedIdx = state.nextUsed();
        int[] heads = new int[size];
        SplitInflight tracker;
        try {
            tracker = SplitInflight.recover(inflightRegion, size, usedIdx, heads);
        } catch (RingViolationException e) {
            throw breakWith(e);
        }
        int n = tracker.resubmitCount();
        for (int k = 0; k < n; k++) {
            poppedHeads[(usedIdx + k) & mask] = heads[k];
        }
        lastAvail = availCache = usedIdx;
        pushCursor = usedIdx;
        resubmitLeft = n;
        inflight = tracker;
        return n;
    }

    @Override
    public int size() {
        return size;
    }

    /**
     * Where the queue stands: the next avail index to pop and the used index it publishes next (wrap counters are
     * not a split ring's and read true). A new queue stands at avail index 0 and at the used.idx the ring holds:
     * the used ring is the device's own area, so the index in it is where a device resuming a ring continues
     * (libvhost-user does the same), and vhost-user's SET_VRING_BASE gives only the avail index.
     */
    @Override
    public QueueState state() {
        if (usedShadow != usedPublished || runLength > 0) {
            if (broken == null) {
                throw new IllegalStateException("used entries pushed but not published: publishUsed() first");
            }
            // Broken: nothing more will be published, so the driver has seen what it will see.
            return QueueState.split(lastAvail + resubmitLeft, usedPublished);
        }
        return QueueState.split(lastAvail + resubmitLeft, usedShadow);
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

    /**
     * Breaks the queue for a reason outside the ring, e.g. the thread serving it died: every later call fails
     * with {@link QueueBrokenException}, as after a violation, until {@link #restart}. A queue already broken keeps
     * its first cause. Called by the thread that owns the queue.
     */
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

    /**
     * Pops the next available chain, or returns null when the driver has made none available. The returned
     * chain is reused by the next pop.
     */
    @Override
    public DescriptorChain pop() {
        checkNotBroken();
        if (lastAvail == availCache) {
            if (resubmitLeft > 0) {
                return popResubmitted();
            }
            availCache = loadAvailIdx();
            if (lastAvail == availCache) {
                return null;
            }
        }
        return popNext();
    }

    /**
     * Pops the chain at lastAvail, known available. Apart from {@link #pop} for the JIT: C2 weighs a call site by how
     * often it ran per call of the method that holds it, and a polling device calls pop far more often on an empty
     * ring than it pops (millions of times while a driver is still starting up); with this work inside pop, its
     * callees looked rare there ("low call site frequency") and were left as calls, depending on how long the
     * ring had been empty when pop was compiled. Here every call pops.
     */
    private DescriptorChain popNext() {
        int slot = lastAvail & mask;
        int head = avail.entry(slot);
        if (head >= size) {
            throw breakWith(new InvalidDescriptorIndexException("avail.ring[" + slot + "]", head,
                    "head index is not below the queue size " + size));
        }
        if (inFlight[head]) {
            throw breakWith(new InvalidDescriptorIndexException("avail.ring[" + slot + "]", head,
                    "head is already in flight (made available twice)"));
        }
        if (inOrder && expectedHead >= 0 && head != expectedHead) {
            throw breakWith(new InOrderViolationException("avail.ring[" + slot + "]", head,
                    "IN_ORDER: the head must be descriptor " + expectedHead + ", the one after the previous chain"));
        }
        int last = walkOrSingle(head);
        if (inOrder) {
            expectedHead = (last + 1) & mask;
        }
        inFlight[head] = true;
        headWritableBytes[head] = chain.writableBytes();
        poppedHeads[slot] = head;
        lastAvail = (lastAvail + 1) & 0xFFFF;
        counters.buffers++;
        if (inflight != null) {
            inflight.fetched(head);
        }
        return chain;
    }

    /**
     * Pops the next head recovered from the inflight region: walked and checked like a chain from the ring (the
     * descriptors are still the driver's, hostile as ever), already marked in flight in the region.
     */
    private DescriptorChain popResubmitted() {
        int head = poppedHeads[lastAvail & mask];
        int last = walk(head);
        if (inOrder) {
            expectedHead = (last + 1) & mask;
        }
        inFlight[head] = true;
        headWritableBytes[head] = chain.writableBytes();
        lastAvail = availCache = (lastAvail + 1) & 0xFFFF;
        resubmitLeft--;
        counters.buffers++;
        return chain;
    }

    /**
     * Gives back the chain popped last, so the next pop returns it again (vhost's {@code vhost_discard_vq_desc}):
     * for a device that took buffers it cannot use after all, e.g. a frame that needs more receive buffers than
     * the driver has posted. Chains are given back in the reverse order of popping.
     *
     * @throws IllegalStateException when {@code head} is not the chain popped last and not yet pushed
     */
    @Override
    public void unpop(int head) {
        int prev = (lastAvail - 1) & 0xFFFF;
        if (head < 0 || head >= size || !inFlight[head] || poppedHeads[prev & mask] != head) {
            throw new IllegalStateException("head " + head + " is not the chain popped last");
        }
        inFlight[head] = false;
        lastAvail = prev;
        counters.buffers--;
        if (inflight != null) {
            if (inflight.isResubmitted(head)) {
                // Back to the resubmit list (every ring pop after it was given back first): pop's slow path again.
                resubmitLeft++;
                availCache = prev;
            } else {
                inflight.unfetched(head);
            }
        }
        if (inOrder) {
            expectedHead = head; // the next pop reads this chain again
        }
    }

    /** Loads avail.idx from shared memory, after checking the driver moved it plausibly. */
    private int loadAvailIdx() {
        int idx = avail.idxAcquire();
        counters.availIdxReads++;
        // rmb: in WEAK mode the acquire load orders the ring entries and descriptors read next after the
        // index; STRONG adds a full fence at this barrier point, and only when the index shows entries to read
        // (as vhost's vhost_get_avail_idx takes smp_rmb only when avail_idx moved): with nothing pending no ring
        // entry or descriptor is read after it, so there is nothing to order, and a busy-polling device would
        // otherwise pay a full fence on every empty poll.
        if (strong && idx != lastAvail) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        int pending = (idx - lastAvail) & 0xFFFF;
        if (pending > size) {
            throw breakWith(new IndexJumpException("avail.idx", idx, "moved " + pending
                    + " entries past last_avail_idx " + lastAvail + ", more than the queue size " + size));
        }
        return idx;
    }

    /**
     * {@link #walk} for any chain; a head without NEXT or INDIRECT (one descriptor: what most drivers post for a
     * transmitted frame) is taken here with the same checks, in code small enough for C2 to inline into
     * {@link #pop}: {@link #walk} is far above its inlining limit for hot methods (FreqInlineSize, 325 bytes of
     * bytecode), so it costs a call per buffer. The descriptor is loaded once: what is checked is what is used.
     */
    private int walkOrSingle(int head) {
        long word = Descriptors.lenFlagsNext(desc, 0, head);
        int flags = Descriptors.flagsOf(word);
        if ((flags & (DESC_F_NEXT | DESC_F_INDIRECT)) != 0) {
            return walk(head);
        }
        chain.reset(head);
        addChecked(Descriptors.addr(desc, 0, head), Descriptors.lenOf(word), (flags & DESC_F_WRITE) != 0, false,
                head);
        return head;
    }

    /**
     * Walks the chain at {@code head} into {@link #chain}, checking every descriptor. Returns the last descriptor
     * of the main table it used: the chain's last, or the INDIRECT one.
     */
    private int walk(int head) {
        chain.reset(head);
        MemorySegment table = desc;
        long tableBase = 0;
        int tableSize = size;
        boolean inIndirect = false;
        boolean seenWritable = false;
        int visited = 0;
        int idx = head;
        int lastMain = head;
        while (true) {
            // One load for len, flags and next: every field is used, and each access pays its own checks.
            long word = Descriptors.lenFlagsNext(table, tableBase, idx);
            int flags = Descriptors.flagsOf(word);
            long addr = Descriptors.addr(table, tableBase, idx);
            long len = Descriptors.lenOf(word);
            visited++;
            if ((flags & DESC_F_INDIRECT) != 0) {
                if (!indirectDesc) {
                    throw breakWith(new IndirectNotNegotiatedException(field(inIndirect, idx, "flags"), flags,
                            "INDIRECT set but VIRTIO_F_INDIRECT_DESC was not negotiated"));
                }
                if (inIndirect) {
                    throw breakWith(new NestedIndirectException(field(true, idx, "flags"), flags,
                            "INDIRECT descriptor inside an indirect table"));
                }
                if ((flags & DESC_F_NEXT) != 0) {
                    throw breakWith(new IndirectWithNextException(field(false, idx, "flags"), flags,
                            "INDIRECT and NEXT set together"));
                }
                if (len == 0 || len % DESC_SIZE != 0) {
                    throw breakWith(new InvalidIndirectTableException(field(false, idx, "len"), len,
                            "indirect table length must be a non-zero multiple of " + DESC_SIZE));
                }
                // Descriptors, not elements: chain.count() also counts the pieces of a direct descriptor split at
                // a region boundary. The direct prefix is what this table visited before this descriptor.
                int direct = visited - 1;
                if (len / DESC_SIZE + direct > size) {
                    throw breakWith(new ChainTooLongException(field(false, idx, "len"), len,
                            "indirect table of " + len / DESC_SIZE + " descriptors after " + direct
                                    + " direct ones exceeds the queue size " + size));
                }
                int r = translate(addr, len, false, idx);
                table = memory.region(r);
                tableBase = memory.offsetIn(r, addr);
                tableSize = (int) (len / DESC_SIZE);
                inIndirect = true;
                visited = 0;
                idx = 0;
                continue;
            }
            boolean writable = (flags & DESC_F_WRITE) != 0;
            if (!writable && seenWritable) {
                throw breakWith(new ReadableAfterWritableException(field(inIndirect, idx, "flags"), flags,
                        "device-readable descriptor after a device-writable one"));
            }
            seenWritable |= writable;
            addChecked(addr, len, writable, inIndirect, idx);
            if ((flags & DESC_F_NEXT) == 0) {
                return lastMain;
            }
            int nextIdx = Descriptors.nextOf(word);
            if (nextIdx >= tableSize) {
                throw breakWith(new InvalidDescriptorIndexException(field(inIndirect, idx, "next"), nextIdx,
                        "next index is not below the table size " + tableSize));
            }
            // Every descriptor of the table has been visited: following one more link must revisit one. This
            // also bounds the chain: a direct chain has at most size descriptors, an indirect table at most
            // size - (direct prefix) by the check above; descriptors split at region boundaries may add elements
            // up to DescriptorChain's capacity (twice the size), which addElement checks.
            if (visited == tableSize) {
                throw breakWith(new DescriptorLoopException(field(inIndirect, idx, "next"), nextIdx,
                        "chain visits more than the " + tableSize + " descriptors of its table: a loop"));
            }
            if (inOrder && !inIndirect && nextIdx != ((idx + 1) & mask)) {
                throw breakWith(new InOrderViolationException(field(false, idx, "next"), nextIdx,
                        "IN_ORDER: a chain must link to the next descriptor in table order, " + ((idx + 1) & mask)));
            }
            idx = nextIdx;
            if (!inIndirect) {
                lastMain = idx;
            }
        }
    }

    /**
     * Checks the length of a direct descriptor's element and adds it to the chain ({@link #addElement}); one place
     * for {@link #walk} and the single-descriptor path, so both refuse the same input with the same error.
     */
    private void addChecked(long addr, long len, boolean writable, boolean inIndirect, int idx) {
        // Zero-length elements are refused, as QEMU and libvhost-user do (the class comment says why).
        if (len == 0) {
            throw breakWith(new ZeroLengthElementException(field(inIndirect, idx, "len"), len,
                    "zero-length buffer element"));
        }
        // The spec bounds a chain at 2^32 bytes, and used.len is 32 bits: a larger chain could not have its
        // writes reported. Checked before the translation so that the total, not the mapping, is named.
        long total = chain.readableBytes() + chain.writableBytes() + len;
        if (total > DescriptorChain.MAX_BYTES) {
            throw breakWith(new ChainTooLargeException(field(inIndirect, idx, "len"), len,
                    "brings the chain's total length to " + total + " bytes, more than 2^32"));
        }
        addElement(addr, len, writable, inIndirect, idx);
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
    private static String field(boolean indirect, int idx, String name) {
        return (indirect ? "indirect[" : "desc[") + idx + "]." + name;
    }

    /**
     * Writes a used element for {@code head} with {@code writtenBytes} bytes written into its writable part.
     * Not visible to the driver until {@link #publishUsed()} or {@link #flushUsed()}.
     *
     * <p>used.len is 32 bits: a writable part of exactly 2^32 bytes (the largest chain the spec allows, all
     * writable) cannot be reported full. Such a device reports at most 2^32 - 1 bytes, which the spec allows (a
     * device may under-report); a larger count is refused rather than truncated.
     *
     * @throws IllegalArgumentException also when {@code writtenBytes} exceeds 2^32 - 1
     */
    @Override
    public void pushUsed(int head, long writtenBytes) {
        checkNotBroken();
        if (head < 0 || head >= size || !inFlight[head]) {
            throw new IllegalStateException("head " + head + " is not a chain popped from this queue and not yet pushed");
        }
        if (inOrder && head != poppedHeads[pushCursor & mask]) {
            throw new IllegalStateException("IN_ORDER: head " + head + " pushed before head "
                    + poppedHeads[pushCursor & mask] + ", which was popped earlier");
        }
        long most = Math.min(headWritableBytes[head], DescriptorChain.MAX_WRITTEN);
        if (writtenBytes < 0 || writtenBytes > most) {
            throw new IllegalArgumentException("written bytes " + writtenBytes + " outside [0, " + most
                    + "] for head " + head + " (its writable part is " + headWritableBytes[head]
                    + " bytes; used.len is 32 bits)");
        }
        inFlight[head] = false;
        usedShadow = (usedShadow + 1) & 0xFFFF;
        counters.completions++;
        if (inflight != null) {
            inflight.pushed(head);
        }
        if (!inOrder) {
            used.elem((usedShadow - 1) & mask, head, (int) writtenBytes);
            return;
        }
        pushCursor = (pushCursor + 1) & 0xFFFF;
        runLength++;
        runHead = head;
        runWritten = writtenBytes;
        // The driver takes every buffer of a run but the last as fully written: one written in part must be last.
        if (writtenBytes != headWritableBytes[head]) {
            closeRun();
        }
    }

    /** Writes the open run's one used entry: the last buffer's id and length, in the slot of the first. */
    private void closeRun() {
        used.elem((usedShadow - runLength) & mask, runHead, (int) runWritten);
        runLength = 0;
    }

    /** Publishes every used element pushed so far with one store of {@code used.idx}. */
    @Override
    public void publishUsed() {
        if (runLength > 0) {
            closeRun();
        }
        if (usedPublished == usedShadow) {
            return;
        }
        // wmb (store->store): the used elements and the payload written into the buffers must be visible before
        // used.idx, or the driver reads a stale id/len or stale data. WEAK: the release store orders them;
        // STRONG: a full fence first.
        if (strong) {
            VarHandle.fullFence();
            counters.strongFences++;
        }
        used.idxRelease(usedShadow);
        if (inflight != null) {
            inflight.published(usedShadow);
        }
        if (log != null) {
            logPublished();
        }
        // Entries published without a notification decision can carry used.idx round the 16-bit circle past the
        // index of the last decision: need_event's old index would then name a point 65,536 entries back and
        // could suppress a notification the driver asked for. Once the new index passes it, it is stale: the
        // next decision notifies unconditionally (Linux vhost_add_used_n, libvhost-user vu_queue_flush).
        if (((usedShadow - signalledUsed) & 0xFFFF) < ((usedShadow - usedPublished) & 0xFFFF)) {
            signalledUsedValid = false;
        }
        usedPublished = usedShadow;
        counters.usedIdxWrites++;
    }

    /**
     * Whether the driver wants a used-buffer notification for the elements published since the last
     * decision. With EVENT_IDX: {@code need_event(used_event, new, old)}, and always true for the first decision
     * after a (re)start, when {@code old} is unknown (libvhost-user does the same). Without it: the
     * NO_INTERRUPT flag, which is authoritative every time, the first included.
     */
    @Override
    public boolean needNotify() {
        // mb (store->load): our used.idx store must be visible before we load used_event / avail.flags. The driver
        // stores used_event (or clears NO_INTERRUPT) then loads used.idx; without a full fence both loads can pass
        // both stores: we see "no interrupt" while the driver sees the old used.idx and sleeps forever.
        Fences.storeLoad();
        usedDecided = usedPublished;
        if (eventIdx) {
            int old = signalledUsed;
            boolean valid = signalledUsedValid;
            signalledUsed = usedPublished;
            signalledUsedValid = true;
            return !valid || SplitLayout.needEvent(avail.usedEventAcquire(), usedPublished, old);
        }
        return (avail.flagsAcquire() & AVAIL_F_NO_INTERRUPT) == 0;
    }

    /**
     * Publishes the used elements pushed so far and notifies the driver if it asked for it.
     *
     * @return {@link #FLUSH_NONE}, {@link #FLUSH_NOTIFIED} or {@link #FLUSH_SUPPRESSED}
     */
    @Override
    public int flushUsedOutcome() {
        checkNotBroken();
        publishUsed();
        if (usedPublished == usedDecided) {
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

    /** Asks the driver not to kick (a hint: it still may). With EVENT_IDX, avail_event is simply left behind. */
    @Override
    public void disableKicks() {
        counters.disableCalls++;
        if (!kicksEnabled) {
            return;
        }
        kicksEnabled = false;
        if (!eventIdx) {
            used.flagsRelease(USED_F_NO_NOTIFY);
            if (log != null) {
                logUsedBytes(SplitLayout.USED_FLAGS, 2);
            }
        }
    }

    /**
     * Asks the driver to kick for the next available buffer, then re-reads {@code avail.idx}.
     *
     * <p>With {@code cachedAvailOnEnable} the index read here becomes the cached avail index, so the
     * next {@link #pop()} finds the new chains without reading {@code avail.idx} again. Reads like the driver's
     * {@link io.virtio4j.core.driver.SplitDriverQueue#enableCallbacksOrFindPending()}: true means work is pending.
     *
     * @return true when buffers are available (do not sleep: pop them); false when it is safe to sleep
     */
    @Override
    public boolean enableKicksOrFindPending() {
        checkNotBroken();
        counters.enableCalls++;
        kicksEnabled = true;
        if (eventIdx) {
            used.availEventRelease((lastAvail + resubmitLeft) & 0xFFFF);
        } else {
            used.flagsRelease(0);
        }
        if (log != null) {
            logUsedBytes(eventIdx ? SplitLayout.USED_RING + (long) SplitLayout.USED_ELEM_SIZE * size : SplitLayout.USED_FLAGS, 2);
        }
        if (resubmitLeft > 0) {
            return true; // buffers recovered from the inflight region wait: no need to look at the ring
        }
        // mb (store->load): the avail_event / flags store must be visible before we re-read avail.idx. The
        // driver stores avail.idx then loads avail_event / used.flags; without the fence it can see the old
        // "no kick" state while we see the old avail.idx, and we sleep with a buffer available: a lost kick.
        Fences.storeLoad();
        int idx = loadAvailIdx();
        if (cachedAvailOnEnable) {
            availCache = idx;
        }
        return idx != lastAvail;
    }

    /**
     * Logs every write of this queue into its used ring (entries, index, flags, avail_event) in {@code log} from
     * now on, the ring lying at guest-physical {@code usedGuestAddr} (vhost-user's {@code log_guest_addr}); null
     * stops logging. Each write is marked after it is stored (see {@link DirtyLog}). The descriptor table is never
     * written by a split device: {@code descGuestAddr} is not used.
     */
    @Override
    public void logUsed(DirtyLog log, long usedGuestAddr, long descGuestAddr) {
        this.log = log;
        this.usedLogAddr = usedGuestAddr;
    }

    /**
     * Marks the used slots published by the publication just made (from {@code usedPublished} to {@code usedShadow},
     * round the ring if they wrap) and used.idx. A log too small for them breaks the queue: the entries are
     * published, but a migration would miss them.
     */
    private void logPublished() {
        int n = Math.min((usedShadow - usedPublished) & 0xFFFF, size);
        int first = usedPublished & mask;
        int head = Math.min(n, size - first);
        logUsedBytes(SplitLayout.USED_RING + (long) SplitLayout.USED_ELEM_SIZE * first, (long) SplitLayout.USED_ELEM_SIZE * head);
        if (n > head) {
            logUsedBytes(SplitLayout.USED_RING, (long) SplitLayout.USED_ELEM_SIZE * (n - head));
        }
        logUsedBytes(SplitLayout.USED_IDX, 2);
    }

    private void logUsedBytes(long offset, long len) {
        try {
            log.mark(usedLogAddr + offset, len);
        } catch (DirtyLogOverflowException e) {
            throw breakWith(e);
        }
    }
}
