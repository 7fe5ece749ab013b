package io.virtio4j.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.RingViolationException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Fuzz target (a): the device-side descriptor-chain walker of both ring formats, driven by an action grammar in the
 * manner of QEMU's virtqueue fuzzer. The input picks the ring's shape, then a program: the honest driver adds
 * buffers and publishes them, the device pops, pushes and publishes, the driver reaps, and a hostile driver writes
 * arbitrary values into what the driver owns (descriptors, the available ring or driver event area, indirect
 * tables).
 *
 * <p>Invariants. Every chain the device hands out lies inside guest memory, readable elements first, at most
 * 2^32 bytes, and names no buffer already in flight. As long as nothing hostile was written: each popped chain is
 * exactly the oldest buffer added and not yet popped (same elements, same readable bytes), no violation is ever
 * raised, and after a final drain every buffer has come back exactly once with the length the device wrote and
 * the bytes it wrote. Once something hostile was written: the device may refuse with a named
 * {@link RingViolationException} (it is then broken, and says so with {@link QueueBrokenException}), the honest
 * driver may too; the driver still reaps only buffers it added, each once, never longer than their writable part
 * (completeness is not asked then: a hostile driver can withdraw its own buffers, e.g. by clearing a packed
 * descriptor's AVAIL bit, and no device can tell). Nothing else is ever thrown, and guest memory's canaries stay
 * intact.
 */
class DeviceRingFuzzTest {
    private static final int MAX_REPLY = 4096;
    private static final int MAX_OPS = 2000;

    @FuzzTest(maxDuration = "10s")
    void walk(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        try (RingHarness h = new RingHarness(in)) {
            new Run(h, in).run();
        }
    }

    /** One program against one ring. */
    private static final class Run {
        private final RingHarness h;
        private final FuzzInput in;
        private final DriverQueue driver;
        private final DeviceQueue device;
        private final MemorySegment scratch;
        private final ScatterGather sg;
        private final RingBuffer[] bySlot;
        /** Buffers added and not yet popped, oldest first: what an honest ring pops next. */
        private final ArrayDeque<RingBuffer> unpopped = new ArrayDeque<>();
        private final List<RingBuffer> all = new ArrayList<>();
        /** Buffers the device popped and has not pushed, in pop order. */
        private final List<Popped> popped = new ArrayList<>();
        private boolean hostile;
        private long seq;

        /** Every pop in order, pushed or not: only an unpushed chain popped last can be unpopped. */
        private final ArrayDeque<Popped> pops = new ArrayDeque<>();

        /** A chain the device popped; compared by identity (two pops of one id are two entries). */
        private static final class Popped {
            private final int id;
            private final long written;
            private final RingBuffer buffer;

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

        Run(RingHarness h, FuzzInput in) {
            this.h = h;
            this.in = in;
            driver = h.driver;
            device = h.device;
            scratch = h.arena.allocate(Math.max(MAX_REPLY, (long) h.maxElements * RingHarness.ELEM_MAX));
            sg = new ScatterGather(h.maxElements);
            bySlot = new RingBuffer[h.size];
        }

        void run() {
            for (int ops = 0; in.hasMore() && ops < MAX_OPS; ops++) {
                switch (in.u8() % 11) {
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
                    });
                    case 6 -> reap();
                    case 7 -> {
                        hostile = true;
                        h.scribble(in, h.driverAreas());
                    }
                    case 8 -> unpop();
                    case 9 -> deviceCall(() -> {
                        if (in.bool()) {
                            device.enableKicksOrFindPending();
                        } else {
                            device.disableKicks();
                        }
                    });
                    default -> driverCall(() -> {
                        switch (in.below(3)) {
                            case 0 -> driver.enableCallbacksOrFindPending();
                            case 1 -> driver.enableCallbacksDelayedOrFindPending();
                            default -> driver.disableCallbacks();
                        }
                    });
                }
            }
            drain();
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
            if (!hostile) {
                b = unpopped.pollFirst();
                assertNotNull(b, "honest ring: the device popped chain " + c.head() + " the driver never added");
                checkChainIsBuffer(c, b);
                b.state = RingBuffer.State.POPPED;
            } else {
                RingBuffer guess = c.count() > 0 ? bufferAt(c, 0) : null;
                if (guess != null && guess.state == RingBuffer.State.ADDED) {
                    unpopped.remove(guess);
                    guess.state = RingBuffer.State.POPPED;
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
            Popped p = new Popped(c.head(), written, b);
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
            deviceCall(() -> device.pushUsed(p.id(), p.written()));
            if (p.buffer() != null && !device.isBroken()) {
                p.buffer().state = RingBuffer.State.PUSHED;
                p.buffer().written = p.written();
            }
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
            device.unpop(p.id());
            pops.pop();
            popped.remove(p);
            if (p.buffer() != null) {
                p.buffer().state = RingBuffer.State.ADDED;
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
            assertTrue(b.state != RingBuffer.State.REAPED, "buffer " + b.seq + " reaped twice");
            assertTrue(len >= 0 && len <= b.writableBytes, "buffer " + b.seq + " reaped with length " + len
                    + " of " + b.writableBytes + " writable");
            if (!hostile) {
                assertEquals(RingBuffer.State.PUSHED, b.state, "buffer " + b.seq + " reaped before it was pushed");
                assertEquals(b.written, len, "used length of buffer " + b.seq);
                assertTrue(b.replyIntact(h.guest, len), "the device's bytes in buffer " + b.seq);
            }
            b.state = RingBuffer.State.REAPED;
            unpopped.remove(b);
            bySlot[b.slot] = null;
        }

        private void drain() {
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
                    if (p.buffer() != null && !device.isBroken()) {
                        p.buffer().state = RingBuffer.State.PUSHED;
                        p.buffer().written = p.written();
                    }
                    progress++;
                }
                deviceCall(device::flushUsed);
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
            // Completeness is the honest ring's promise only: a hostile driver can always take back what it
            // offered (clear a packed descriptor's AVAIL bit, rewrite an available entry) and the device cannot
            // know; that is the driver's loss, not the device's fault.
            if (!hostile) {
                for (RingBuffer b : all) {
                    assertEquals(RingBuffer.State.REAPED, b.state, "buffer " + b.seq + " never came back");
                }
                assertEquals(0, driver.inFlight(), "driver still counts buffers in flight");
            }
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
            if (!hostile) {
                fail("the device refused an honest ring", e);
            }
            assertTrue(device.isBroken(), "a violation that did not break the device queue: " + e);
            assertSame(e, device.violation());
            assertNotNull(e.field(), "a violation names its field");
            assertSame(e, assertThrows(QueueBrokenException.class, device::pop).violation());
        }

        private void driverBroke(RingViolationException e) {
            if (!hostile) {
                fail("the driver refused an honest device", e);
            }
            assertTrue(driver.isBroken(), "a violation that did not break the driver queue: " + e);
            assertNotNull(e.field(), "a violation names its field");
            assertThrows(QueueBrokenException.class, driver::pollUsed);
        }
    }
}
