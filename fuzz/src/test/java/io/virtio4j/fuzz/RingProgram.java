package io.virtio4j.fuzz;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The two sides of one ring under a fuzzer's program (the ring fuzz targets share it): an honest driver that adds
 * buffers it can recognise (each in its own pool slot, readable bytes from a pattern), a device that pops,
 * writes a reply pattern, pushes and publishes, and the driver reaping; the target adds what its hostile party
 * writes and calls {@link #hostile()} first.
 *
 * <p>Checked on every step: each chain the device hands out lies inside guest memory, readable elements first,
 * at most 2^32 bytes, and names no buffer already in flight; the driver reaps only buffers it added, each once,
 * never longer than their writable part; a violation is a named {@link RingViolationException} that leaves its
 * queue broken (which then says {@link QueueBrokenException}), and nothing else is thrown. As long as nothing
 * hostile was written: each popped chain is exactly the oldest buffer added and not yet popped (same elements, same
 * readable bytes), no violation is raised, and after {@link #drain()} every buffer came back exactly once with the
 * length and the bytes the device wrote. Once something hostile was written, completeness is not asked: a hostile
 * party can always withhold buffers (a driver can clear a packed descriptor's AVAIL bit, a device never complete
 * them) and the other side cannot tell.
 */
final class RingProgram {
    private static final int MAX_REPLY = 4096;
    private static final int MAX_OPS = 2000;

    private final RingHarness h;
    private final FuzzInput in;
    private final DriverQueue driver;
    /** The back-end's queue: a new one after each {@link #crash}. */
    private DeviceQueue device;
    /** Where the device stood at its last publication: what the driver saw (packed restarts from it). */
    private QueueState published = QueueState.INITIAL;
    private final MemorySegment scratch;
    private final ScatterGather sg;
    private final RingBuffer[] bySlot;
    /** Buffers added and not yet popped, oldest first: what an honest ring pops next. */
    private final ArrayDeque<RingBuffer> unpopped = new ArrayDeque<>();
    private final List<RingBuffer> all = new ArrayList<>();
    /** Buffers the device popped and has not pushed, in pop order. */
    private final List<Popped> popped = new ArrayList<>();
    private boolean hostile;
    /** A reconnect re-offered the buffers in flight: pops no longer follow the order of adding. */
    private boolean reordered;
    private int ops;
    private long seq;

    /** Every pop in order, pushed or not: only an unpushed chain popped last can be unpopped. */
    private final ArrayDeque<Popped> pops = new ArrayDeque<>();

    /** A chain the device popped; compared by identity (two pops of one id are two entries). */
    private static final class Popped {
        private final int id;
        private final long written;
        private final RingBuffer buffer;
        /** Popped from the resubmitted buffers of a recovery, not from the ring. */
        private boolean resubmitted;

        Popped(int id, long written, RingBuffer buffer) {
            this.id = id;
            this.written = written;
            this.buffer = buffer;
        }

        int id() {
            return id;
        }

        long written() {
            return written;
        }

        RingBuffer buffer() {
            return buffer;
        }
    }

    RingProgram(RingHarness h, FuzzInput in) {
        this.h = h;
        this.in = in;
        driver = h.driver;
        device = h.device;
        scratch = h.arena.allocate(Math.max(MAX_REPLY, (long) h.maxElements * RingHarness.ELEM_MAX));
        sg = new ScatterGather(h.maxElements);
        bySlot = new RingBuffer[h.size];
    }

    /** From now on the ring holds something a hostile party wrote. */
    void hostile() {
        hostile = true;
    }

    /** Number of the opcodes {@link #step} knows; a target numbers its own hostile opcodes from here. */
    static final int COMMON_OPS = 10;

    /** Whether the program may take another step (input left, and not past the step limit). */
    boolean more() {
        return in.hasMore() && ++ops <= MAX_OPS;
    }

    /** One step of either honest side, {@code op} in [0, {@link #COMMON_OPS}). */
    void step(int op) {
        trace("op " + op);
        switch (op) {
            case 0, 1 -> add();
            case 2 -> driverCall(() -> driver.kick());
            case 3 -> pop();
            case 4 -> push();
            case 5 -> deviceCall(() -> {
                if (in.bool()) {
                    device.flushUsed();
                } else {
                    device.publishUsed();
                }
                published();
                published = device.state();
            });
            case 6 -> reap();
            case 7 -> unpop();
            case 8 -> deviceCall(() -> {
                if (in.bool()) {
                    device.enableKicksOrFindPending();
                } else {
                    device.disableKicks();
                }
            });
            case 9 -> driverCall(() -> {
                switch (in.below(3)) {
                    case 0 -> driver.enableCallbacksOrFindPending();
                    case 1 -> driver.enableCallbacksDelayedOrFindPending();
                    default -> driver.disableCallbacks();
                }
            });
            default -> throw new IllegalArgumentException("opcode " + op);
        }
    }

    private void add() {
        int n = 1 + in.below(h.maxElements);
        int readable = in.below(n + 1);
        if (driver.isBroken()) {
            return;
        }
        int slot = freeSlot();
        if (slot < 0) {
            return;
        }
        sg.clear();
        for (int e = 0; e < n; e++) {
            int len = 1 + in.below(RingHarness.ELEM_MAX);
            if (e < readable) {
                sg.readable(h.slotAddress(slot, e), len);
            } else {
                sg.writable(h.slotAddress(slot, e), len);
            }
        }
        if (!driver.hasRoomFor(sg)) {
            return;
        }
        RingBuffer b = new RingBuffer(seq++, slot, sg);
        trace("add buffer " + b.seq + " slot " + slot + " elements " + n + " readable " + readable);
        b.fill(h.guest);
        driverCall(() -> driver.add(sg, b));
        bySlot[slot] = b;
        unpopped.addLast(b);
        all.add(b);
    }

    private int freeSlot() {
        for (int s = 0; s < bySlot.length; s++) {
            if (bySlot[s] == null) {
                return s;
            }
        }
        return -1;
    }

    /** Pops one chain; returns whether there was one. */
    private boolean pop() {
        if (device.isBroken()) {
            return false;
        }
        int wanted = in.u16();
        DescriptorChain c;
        try {
            c = device.pop();
        } catch (RingViolationException e) {
            deviceBroke(e);
            return false;
        }
        if (c == null) {
            return false;
        }
        checkChainShape(c);
        RingBuffer b = null;
        boolean wasOwed = false;
        if (!hostile) {
            // FIFO until a reconnect: the driver then re-offers what is left in an order of its own
            b = reordered ? bufferAt(c, 0) : unpopped.peekFirst();
            assertNotNull(b, "honest ring: the device popped chain " + c.head() + " the driver never added");
            assertEquals(RingBuffer.State.ADDED, b.state, "honest ring: buffer " + b.seq + " popped again");
            unpopped.remove(b);
            checkChainIsBuffer(c, b);
            b.state = RingBuffer.State.POPPED;
            wasOwed = b.owed;
            b.owed = true;
        } else {
            RingBuffer guess = c.count() > 0 ? bufferAt(c, 0) : null;
            if (guess != null && guess.state == RingBuffer.State.ADDED) {
                unpopped.remove(guess);
                guess.state = RingBuffer.State.POPPED;
                guess.owed = true;
                b = guess;
            }
        }
        long writable = c.writableBytes();
        long written = writable == 0 ? 0 : wanted % (Math.min(writable, MAX_REPLY) + 1);
        long replySeed = b != null ? b.replySeed() : 0;
        for (long i = 0; i < written; i++) {
            scratch.set(ValueLayout.JAVA_BYTE, i, RingHarness.pattern(replySeed, i));
        }
        assertEquals(written, c.scatter(0, scratch, 0, written), "scatter into the writable part");
        trace("popped id " + c.head() + " buffer " + (b == null ? "?" : b.seq) + " written " + written);
        Popped p = new Popped(c.head(), written, b);
        // a buffer the device already owed (resubmitted, or given back after that) came from its resubmitted
        // buffers, not from the ring
        p.resubmitted = wasOwed;
        popped.add(p);
        pops.push(p);
        return true;
    }

    /** What every chain must satisfy, whoever wrote the ring. */
    private void checkChainShape(DescriptorChain c) {
        assertTrue(c.count() >= 1, "a chain with no element");
        long total = 0;
        boolean writableSeen = false;
        for (int i = 0; i < c.count(); i++) {
            MemorySegment r = c.region(i);
            long start = r.address() + c.offset(i);
            assertTrue(c.offset(i) >= 0 && c.length(i) >= 0 && c.offset(i) + c.length(i) <= r.byteSize(),
                    "element " + i + " outside its region");
            assertTrue(start >= h.guest.address() && start + c.length(i) <= h.guest.address() + h.guest.byteSize(),
                    "element " + i + " outside guest memory");
            if (c.isWritable(i)) {
                writableSeen = true;
            } else {
                assertTrue(!writableSeen, "readable element " + i + " after a writable one");
            }
            total += c.length(i);
        }
        assertEquals(total, c.readableBytes() + c.writableBytes(), "chain byte counts");
        assertTrue(total <= 1L << 32, "chain of " + total + " bytes");
        for (Popped p : popped) {
            assertTrue(p.id() != c.head(), "id " + c.head() + " handed out twice while in flight");
        }
    }

    private RingBuffer bufferAt(DescriptorChain c, int i) {
        long addr = c.region(i).address() + c.offset(i) - h.guest.address();
        int slot = h.slotOf(addr);
        return slot >= 0 && slot < bySlot.length ? bySlot[slot] : null;
    }

    private void checkChainIsBuffer(DescriptorChain c, RingBuffer b) {
        assertEquals(b.addr.length, c.count(), "elements of buffer " + b.seq);
        for (int i = 0; i < c.count(); i++) {
            assertEquals(b.addr[i], c.region(i).address() + c.offset(i) - h.guest.address(),
                    "address of element " + i + " of buffer " + b.seq);
            assertEquals(b.len[i], c.length(i), "length of element " + i + " of buffer " + b.seq);
            assertEquals(i >= b.readable, c.isWritable(i), "direction of element " + i + " of buffer " + b.seq);
        }
        assertEquals(b.readableBytes, c.readableBytes());
        assertEquals(b.writableBytes, c.writableBytes());
        assertEquals(b.readableBytes, c.gather(0, scratch, 0, b.readableBytes));
        for (long i = 0; i < b.readableBytes; i++) {
            assertEquals(RingHarness.pattern(b.seq, i), scratch.get(ValueLayout.JAVA_BYTE, i),
                    "readable byte " + i + " of buffer " + b.seq);
        }
    }

    private void push() {
        if (device.isBroken() || popped.isEmpty()) {
            in.u8();
            return;
        }
        int k = h.inOrder ? 0 : in.below(popped.size());
        Popped p = popped.remove(k);
        trace("push id " + p.id() + " written " + p.written());
        deviceCall(() -> device.pushUsed(p.id(), p.written()));
        pushed(p);
    }

    private void unpop() {
        if (device.isBroken() || popped.isEmpty()) {
            return;
        }
        // only the chain popped last and not yet pushed: what unpop promises to take back
        Popped p = pops.peek();
        if (p == null || !popped.contains(p)) {
            return;
        }
        trace("unpop id " + p.id());
        device.unpop(p.id());
        pops.pop();
        popped.remove(p);
        // the buffer is the driver's again, unless a forged used entry already handed it back
        if (p.buffer() != null && p.buffer().state == RingBuffer.State.POPPED) {
            p.buffer().state = RingBuffer.State.ADDED;
            // a ring pop given back rewinds the ring; a resubmitted one goes back to the resubmitted, still owed
            p.buffer().owed = p.resubmitted;
            unpopped.addFirst(p.buffer());
        }
    }

    private void reap() {
        if (driver.isBroken()) {
            return;
        }
        Object token;
        try {
            token = driver.pollUsed();
        } catch (RingViolationException e) {
            driverBroke(e);
            return;
        }
        if (token == null) {
            return;
        }
        RingBuffer b = (RingBuffer) token;
        long len = driver.lastUsedLength();
        trace("reaped buffer " + b.seq + " length " + len);
        assertTrue(b.state != RingBuffer.State.REAPED, "buffer " + b.seq + " reaped twice");
        assertTrue(len >= 0 && len <= b.writableBytes, "buffer " + b.seq + " reaped with length " + len
                + " of " + b.writableBytes + " writable");
        if (!hostile) {
            assertEquals(RingBuffer.State.PUBLISHED, b.state, "buffer " + b.seq + " reaped before it was published");
            assertEquals(b.written, len, "used length of buffer " + b.seq);
            assertTrue(b.replyIntact(h.guest, len), "the device's bytes in buffer " + b.seq);
        }
        b.state = RingBuffer.State.REAPED;
        unpopped.remove(b);
        bySlot[b.slot] = null;
    }

    private static final boolean TRACE = System.getenv("VIRTIO4J_FUZZ_TRACE") != null;

    /** Prints a step of the program when VIRTIO4J_FUZZ_TRACE is set (to read a finding); silent otherwise. */
    void trace(String what) {
        if (TRACE) {
            System.out.println("  " + what + "  [driver " + (driver.isBroken() ? "broken" : "ok") + ", device "
                    + (device.isBroken() ? "broken" : "ok") + "]");
        }
    }

    void drain() {
        trace("drain");
        for (int round = 0; round < 2 * h.size + 4; round++) {
            int progress = 0;
            if (!driver.isBroken()) {
                driverCall(() -> driver.kick());
            }
            for (int i = 0; i <= h.size && pop(); i++) {
                progress++;
            }
            while (!device.isBroken() && !popped.isEmpty()) {
                Popped p = popped.removeFirst();
                deviceCall(() -> device.pushUsed(p.id(), p.written()));
                pushed(p);
                progress++;
            }
            deviceCall(() -> {
                device.flushUsed();
                published();
                published = device.state();
            });
            for (int i = 0; i <= h.size && !driver.isBroken() && hasUsed(); i++) {
                reap();
                progress++;
            }
            if (progress == 0) {
                break;
            }
        }
        if (!hostile) {
            assertTrue(!device.isBroken() && !driver.isBroken(), "honest ring broke");
        }
        // Completeness is the honest ring's promise only (see the class comment).
        if (!hostile) {
            for (RingBuffer b : all) {
                assertEquals(RingBuffer.State.REAPED, b.state, "buffer " + b.seq + " never came back");
            }
            assertEquals(0, driver.inFlight(), "driver still counts buffers in flight");
        }
    }

    /**
     * The device pushed {@code p}: its buffer, if known and still the device's (a forged used entry may have
     * handed it back to the driver already), now waits for publication.
     */
    private void pushed(Popped p) {
        RingBuffer b = p.buffer();
        if (b != null && !device.isBroken() && b.state == RingBuffer.State.POPPED) {
            b.state = RingBuffer.State.PUSHED;
            b.written = p.written();
        }
    }

    /** The device published every used entry pushed so far. */
    private void published() {
        for (RingBuffer b : all) {
            if (b.state == RingBuffer.State.PUSHED) {
                b.state = RingBuffer.State.PUBLISHED;
                b.owed = false;
            }
        }
    }

    /**
     * The device goes away and a new one takes the ring over without a record of what the old one had taken
     * (split only): the driver re-offers every buffer whose used entry was not published
     * ({@link DriverQueue#reofferInFlight()}) and the new device resumes at the index it returns.
     */
    void reconnect() {
        if (h.format != RingFormat.SPLIT || driver.isBroken()) {
            return;
        }
        int base;
        try {
            base = driver.reofferInFlight();
        } catch (RingViolationException e) {
            driverBroke(e);
            return;
        }
        try {
            device.restart(QueueState.split(base, base));
        } catch (RingViolationException e) {
            deviceBroke(e);
            return;
        }
        popped.clear();
        pops.clear();
        for (RingBuffer b : all) {
            if (b.state == RingBuffer.State.POPPED || b.state == RingBuffer.State.PUSHED) {
                b.state = RingBuffer.State.ADDED;
                unpopped.addLast(b);
            }
        }
        reordered = true;
    }

    /**
     * Turns inflight tracking on: the device restarts where it stands over the harness's region, which holds the
     * input's garbage but a version of 0 (fresh: a back-end must trust nothing else in it), so nothing is
     * resubmitted.
     */
    void trackInflight() {
        MemorySegment r = h.inflightRegion;
        int seed = in.u8();
        for (long i = 0; i < r.byteSize(); i++) {
            r.set(ValueLayout.JAVA_BYTE, i, RingHarness.pattern(seed, i));
        }
        r.set(ValueLayout.JAVA_SHORT_UNALIGNED, h.format == RingFormat.SPLIT
                ? InflightLayout.SPLIT_VERSION
                : InflightLayout.PACKED_VERSION, (short) 0);
        assertEquals(0, device.restart(device.state(), r), "a fresh region resubmits nothing");
        published = device.state();
    }

    /**
     * The back-end dies where it stands (kill -9) and a new one takes the ring and the inflight region over,
     * restarted as QEMU restarts it after a disconnect (split: at the ring's used.idx; packed: at the used position
     * the driver last saw published). Honest region: exactly the buffers the old device had fetched and not
     * published are resubmitted, each once, before anything else. Scribbled region: the restart may refuse it with
     * {@link io.virtio4j.core.error.InvalidInflightRegionException} (the queue is broken) or a later pop may refuse
     * an entry; whatever is resubmitted lies in guest memory and names no buffer twice.
     */
    void crash() {
        QueueState state;
        if (h.format == RingFormat.SPLIT) {
            long idxAt = h.deviceAreas()[0][0] + 2;
            int usedIdx = Short.toUnsignedInt(h.guest.get(ValueLayout.JAVA_SHORT_UNALIGNED, idxAt));
            state = QueueState.split(usedIdx, usedIdx);
        } else {
            state = new QueueState(published.nextUsed(), published.usedWrap(),
                    published.nextUsed(), published.usedWrap());
        }
        // what the dead back-end owed: taken (from the ring or a recovery) and not published
        List<RingBuffer> fetched = new ArrayList<>();
        for (RingBuffer b : all) {
            if (b.owed && (b.state == RingBuffer.State.ADDED || b.state == RingBuffer.State.POPPED
                    || b.state == RingBuffer.State.PUSHED)) {
                b.state = RingBuffer.State.ADDED;
                fetched.add(b);
            }
        }
        popped.clear();
        pops.clear();
        unpopped.clear();
        for (RingBuffer b : all) {
            if (b.state == RingBuffer.State.ADDED) {
                unpopped.add(b);
            }
        }
        reordered = true;
        device = h.newDevice();
        int n;
        try {
            n = device.restart(state, h.inflightRegion);
        } catch (RingViolationException e) {
            deviceBroke(e);
            return;
        }
        trace("crash: " + n + " resubmitted, " + fetched.size() + " fetched and not published");
        published = device.state();
        if (!hostile) {
            // DeviceQueue.restart's contract: every buffer still marked in flight is resubmitted
            assertEquals(fetched.size(), n, "buffers resubmitted after a crash");
        }
        Set<RingBuffer> again = new HashSet<>();
        for (int i = 0; i < n; i++) {
            int before = popped.size();
            if (!pop() || popped.size() == before) {
                assertTrue(hostile, "resubmitted buffer " + i + " of " + n + " did not pop");
                return;
            }
            popped.getLast().resubmitted = true;
            RingBuffer b = popped.getLast().buffer();
            if (!hostile) {
                assertTrue(b != null && fetched.contains(b), "resubmitted a buffer the old device had not fetched");
            }
            if (b != null) {
                assertTrue(again.add(b), "buffer " + b.seq + " resubmitted twice");
            }
        }
    }

    /** The front-end writes 1 to 8 bytes the input chooses into the inflight region. */
    void scribbleRegion() {
        hostile();
        RingHarness.scribble(in, h.inflightRegion, new long[][]{{0, h.inflightRegion.byteSize()}});
    }

    /**
     * The device stops for good and the driver takes back what it still owns ({@link DriverQueue#detachUnused()}):
     * whatever the other side did, every buffer added has then come back exactly once, reaped or detached, unless
     * the driver broke; and the driver can be reset.
     */
    void detachAll() {
        if (driver.isBroken()) {
            return;
        }
        Object token;
        while ((token = driver.detachUnused()) != null) {
            RingBuffer b = (RingBuffer) token;
            assertTrue(b.state != RingBuffer.State.REAPED, "buffer " + b.seq + " detached after it came back");
            trace("detached buffer " + b.seq);
            b.state = RingBuffer.State.REAPED;
            bySlot[b.slot] = null;
        }
        for (RingBuffer b : all) {
            assertEquals(RingBuffer.State.REAPED, b.state, "buffer " + b.seq + " neither reaped nor detached");
        }
        // every descriptor is free again (split's inFlight() still counts detached buffers until reset)
        assertEquals(h.size, driver.freeDescriptors(), "descriptors not freed after every buffer came back");
        driver.reset();
        assertEquals(0, driver.inFlight(), "buffers in flight after reset");
    }

    private boolean hasUsed() {
        try {
            return driver.hasUsed();
        } catch (RingViolationException e) {
            driverBroke(e);
            return false;
        }
    }

    private void deviceCall(Runnable r) {
        if (device.isBroken()) {
            return;
        }
        try {
            r.run();
        } catch (RingViolationException e) {
            deviceBroke(e);
        }
    }

    private void driverCall(Runnable r) {
        if (driver.isBroken()) {
            return;
        }
        try {
            r.run();
        } catch (RingViolationException e) {
            driverBroke(e);
        }
    }

    private void deviceBroke(RingViolationException e) {
        trace("device broke: " + e);
        if (!hostile) {
            fail("the device refused an honest ring", e);
        }
        assertTrue(device.isBroken(), "a violation that did not break the device queue: " + e);
        assertSame(e, device.violation());
        assertNotNull(e.field(), "a violation names its field");
        assertSame(e, assertThrows(QueueBrokenException.class, device::pop).violation());
    }

    private void driverBroke(RingViolationException e) {
        trace("driver broke: " + e);
        if (!hostile) {
            fail("the driver refused an honest device", e);
        }
        assertTrue(driver.isBroken(), "a violation that did not break the driver queue: " + e);
        assertNotNull(e.field(), "a violation names its field");
        assertThrows(QueueBrokenException.class, driver::pollUsed);
    }
}
