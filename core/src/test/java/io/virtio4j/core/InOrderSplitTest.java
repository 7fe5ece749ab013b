package io.virtio4j.core;

import io.virtio4j.core.RingTestSupport.HostileRing;
import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.InOrderViolationException;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.UsedBatchTooLongException;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.policy.AvailPublication;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.SplittableRandom;

import static io.virtio4j.core.RingTestSupport.HostileRing.DATA;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** VIRTIO_F_IN_ORDER on the split ring, driver and device (virtqueue.md 2.12). */
class InOrderSplitTest {
    private static final int R = 0;
    private static final int W = DESC_F_WRITE;
    private static final int NEXT = DESC_F_NEXT;

    private static Pair inOrder(int queueSize) {
        return Pair.open(queueSize, DriverOptions.defaults().withInOrder(true), DeviceOptions.defaults().withInOrder(true));
    }

    // ---- driver ----

    @Test
    void theDriverHandsOutDescriptorsInTableOrderAndWraps() {
        try (Pair p = inOrder(8)) {
            p.add("a", 1, 2); // descriptors 0, 1, 2
            p.add("b", 2, 1); // 3, 4, 5
            assertEquals(0, p.avail.entry(0));
            assertEquals(3, p.avail.entry(1));
            for (int d : new int[] {0, 1, 3, 4}) {
                assertEquals(d + 1, Descriptors.next(p.splitAreas().descTable(), 0, d), "desc[" + d + "].next");
            }
            p.driver.kick();
            p.popAndPush();
            p.popAndPush();
            p.device.flushUsed();
            p.reap("a", "b");
            p.add("c", 1, 3); // 6, 7, then wraps to 0, 1
            assertEquals(6, p.avail.entry(2));
            assertEquals(7, Descriptors.next(p.splitAreas().descTable(), 0, 6));
            assertEquals(0, Descriptors.next(p.splitAreas().descTable(), 0, 7), "the last table entry links to 0");
            assertEquals(1, Descriptors.next(p.splitAreas().descTable(), 0, 0));
            p.add("d", 1, 0); // 2
            assertEquals(2, p.avail.entry(3));
            assertEquals(3, p.driver.freeDescriptors());
            p.driver.kick();
            assertEquals(6, p.device.pop().head(), "the device accepts the wrapped chain");
            assertEquals(2, p.device.pop().head());
        }
    }

    @Test
    void anIndirectBufferTakesOneDescriptor() {
        try (Pair p = Pair.open(8, 4, 3, DriverOptions.defaults().withInOrder(true),
                DeviceOptions.defaults().withInOrder(true))) {
            p.add("direct", 1, 1);    // 0, 1
            p.add("indirect", 2, 2);  // 2
            p.add("next", 1, 0);      // 3
            assertEquals(0, p.avail.entry(0));
            assertEquals(2, p.avail.entry(1));
            assertEquals(3, p.avail.entry(2));
            p.driver.kick();
            for (int i = 0; i < 3; i++) {
                DescriptorChain c = p.device.pop();
                p.device.pushUsed(c.head(), c.writableBytes());
            }
            p.device.flushUsed();
            p.reap("direct", "indirect", "next");
        }
    }

    /** One used entry, in the first buffer's slot, with the last buffer's id: every buffer up to it comes back. */
    @Test
    void theDriverReapsABatchFromOneUsedEntry() {
        try (Pair p = inOrder(8)) {
            p.add("a", 1, 1); // head 0, 16 writable bytes
            p.add("b", 1, 0); // head 2, read-only
            p.add("c", 1, 2); // head 3, 32 writable bytes
            p.add("d", 1, 1); // head 6, not in the batch
            p.driver.kick();
            p.used.elem(0, 3, 5);
            p.used.idxRelease(3);
            assertEquals("a", p.driver.pollUsed());
            assertEquals(16, p.driver.lastUsedLength(), "a skipped buffer counts as fully used");
            assertEquals("b", p.driver.pollUsed());
            assertEquals(0, p.driver.lastUsedLength());
            assertEquals("c", p.driver.pollUsed());
            assertEquals(5, p.driver.lastUsedLength(), "the entry's len is its own buffer's");
            assertNull(p.driver.pollUsed());
            assertEquals(1, p.driver.inFlight());
            assertEquals(6, p.driver.freeDescriptors());
            p.used.elem(3, 6, 16); // the next entry sits at used slot 3
            p.used.idxRelease(4);
            assertEquals("d", p.driver.pollUsed());
            assertEquals(16, p.driver.lastUsedLength());
            assertEquals(8, p.driver.freeDescriptors());
            p.add("e", 1, 0);
            assertEquals(0, p.avail.entry(4), "descriptors wrap to 0 after the batch was freed");
        }
    }

    /**
     * The driver stores an avail entry only when it differs from what the slot holds (IN_ORDER makes them repeat lap
     * after lap). It compares with the ring itself, not with what it stored last: an entry whose head moved (an
     * earlier chain of another length), and one the device scribbled over, must both be stored again.
     */
    @Test
    void aRepeatedAvailEntryIsLeftAndAChangedOrScribbledOneIsStored() {
        try (Pair p = inOrder(4)) {
            for (String t : new String[] {"a", "b", "c", "d"}) {
                p.add(t, 1, 0); // heads 0, 1, 2, 3 in slots 0..3
            }
            // slot 0 of the zeroed ring holds head 0 already: three stores, not four
            assertEquals(3, p.driver.counters().availEntryWrites);
            p.driver.kick();
            for (int i = 0; i < 4; i++) {
                p.popAndPush();
            }
            p.device.flushUsed();
            p.reap("a", "b", "c", "d");
            p.avail.entry(0, 2); // a hostile device rewrites slot 0, where the driver stored head 0 last lap
            p.add("e", 1, 0); // slot 0: head 0 again, over the scribble
            p.add("f", 2, 0); // slot 1: head 1 again, now with descriptors 1 and 2
            p.add("g", 1, 0); // slot 2: head 3, where 2 stood
            assertEquals(0, p.avail.entry(0), "the scribbled entry is stored over, whatever the driver stored last");
            assertEquals(1, p.avail.entry(1));
            assertEquals(3, p.avail.entry(2), "a moved head is stored");
            assertEquals(3 + 2, p.driver.counters().availEntryWrites, "the scribbled and the moved entry, not f's");
            p.driver.kick();
            for (int head : new int[] {0, 1, 3}) {
                assertEquals(head, p.device.pop().head());
                p.device.pushUsed(head, 0);
            }
            p.device.flushUsed();
            p.reap("e", "f", "g");
        }
    }

    /** The control for the test above: without IN_ORDER every add stores its entry, equal or not. */
    @Test
    void withoutInOrderEveryAddStoresItsAvailEntry() {
        try (Pair p = Pair.open(4, DriverOptions.defaults(), DeviceOptions.defaults())) {
            for (String t : new String[] {"a", "b", "c", "d"}) {
                p.add(t, 1, 0);
            }
            assertEquals(0, p.avail.entry(0), "slot 0 holds what it held before: head 0");
            assertEquals(4, p.driver.counters().availEntryWrites);
        }
    }

    @Test
    void theDriverRejectsAUsedIdThatIsNoHeadInFlight() {
        try (Pair p = inOrder(8)) {
            p.add("a", 1, 1); // 0, 1
            p.add("b", 1, 1); // 2, 3
            p.driver.kick();
            p.used.elem(0, 1, 0); // descriptor 1 is in flight but no head
            p.used.idxRelease(1);
            InvalidUsedIdException e = assertThrows(InvalidUsedIdException.class, p.driver::pollUsed);
            assertEquals("used.ring[0].id", e.field());
            assertEquals(1, e.value());
            assertTrue(p.driver.isBroken());
            assertThrows(QueueBrokenException.class, p.driver::pollUsed);
        }
    }

    @Test
    void theDriverRejectsABatchLongerThanUsedIdxAdvanced() {
        try (Pair p = inOrder(8)) {
            p.add("a", 1, 0); // 0
            p.add("b", 1, 0); // 1
            p.add("c", 1, 0); // 2
            p.driver.kick();
            p.used.elem(0, 2, 0); // completes a, b and c
            p.used.idxRelease(2); // but only two entries
            UsedBatchTooLongException e = assertThrows(UsedBatchTooLongException.class, p.driver::pollUsed);
            assertEquals("used.ring[0].id", e.field());
            assertEquals(2, e.value());
            assertTrue(p.driver.isBroken());
        }
    }

    @Test
    void anUnpublishedBufferCannotEndABatch() {
        try (Pair p = Pair.open(8, DriverOptions.defaults().withInOrder(true).withPublication(AvailPublication.LAZY),
                DeviceOptions.defaults().withInOrder(true))) {
            p.add("a", 1, 0); // 0
            p.driver.publish();
            p.add("b", 1, 0); // 1, added but not published
            p.used.elem(0, 1, 0);
            p.used.idxRelease(1);
            assertThrows(UsedBatchTooLongException.class, p.driver::pollUsed);
        }
    }

    // ---- device ----

    /** Full runs go out as one used entry; a buffer written in part ends its run. */
    @Test
    void theDeviceCoalescesRunsOfFullyWrittenBuffers() {
        try (Pair p = inOrder(16)) {
            p.add("a", 1, 1); // head 0
            p.add("b", 1, 0); // head 2, read-only
            p.add("c", 1, 1); // head 3, written in part
            p.add("d", 1, 1); // head 5
            p.add("e", 1, 1); // head 7
            p.driver.kick();
            for (int i = 0; i < 5; i++) {
                DescriptorChain c = p.device.pop();
                p.device.pushUsed(c.head(), c.head() == 3 ? 7 : c.writableBytes());
            }
            p.device.publishUsed();
            assertEquals(5, p.used.idxAcquire());
            assertEquals(3, p.used.elemId(0), "a, b and c in one entry, in a's slot, with c's id");
            assertEquals(7, p.used.elemLen(0));
            assertEquals(7, p.used.elemId(3), "d and e in one entry, in d's slot, with e's id");
            assertEquals(16, p.used.elemLen(3));
            p.reap("a", "b", "c", "d", "e");
        }
    }

    @Test
    void theDeviceRejectsAHeadOutOfOrder() {
        try (HostileRing ring = HostileRing.open(8, DeviceOptions.defaults().withInOrder(true))) {
            ring.desc(0, DATA, 16, R, 0);
            ring.desc(2, DATA, 16, R, 0);
            ring.makeAvailable(0);
            assertEquals(0, ring.device.pop().head());
            ring.makeAvailable(2); // descriptor 1 was next
            InOrderViolationException e = assertThrows(InOrderViolationException.class, ring.device::pop);
            assertEquals("avail.ring[1]", e.field());
            assertEquals(2, e.value());
            assertTrue(ring.device.isBroken());
            assertThrows(QueueBrokenException.class, ring.device::pop);
            assertTrue(ring.canariesIntact());
        }
    }

    @Test
    void theDeviceRejectsAChainThatSkipsADescriptor() {
        try (HostileRing ring = HostileRing.open(8, DeviceOptions.defaults().withInOrder(true))) {
            ring.desc(0, DATA, 16, R | NEXT, 2); // should link to 1
            ring.desc(2, DATA + 16, 16, W, 0);
            ring.makeAvailable(0);
            InOrderViolationException e = assertThrows(InOrderViolationException.class, ring.device::pop);
            assertEquals("desc[0].next", e.field());
            assertEquals(2, e.value());
            assertTrue(ring.device.isBroken());
        }
    }

    @Test
    void theDeviceTakesAChainWrappingFromTheLastDescriptorToTheFirst() {
        try (HostileRing ring = HostileRing.open(8, DeviceOptions.defaults().withInOrder(true))) {
            for (int d = 0; d < 7; d++) {
                ring.desc(d, DATA, 16, R, 0);
                ring.makeAvailable(d);
                DescriptorChain c = ring.device.pop();
                ring.device.pushUsed(c.head(), 0);
            }
            ring.desc(7, DATA, 16, R | NEXT, 0);
            ring.desc(0, DATA, 16, W, 0);
            ring.makeAvailable(7);
            DescriptorChain c = ring.device.pop();
            assertEquals(2, c.count());
            ring.desc(1, DATA, 16, R, 0);
            ring.makeAvailable(1);
            assertEquals(1, ring.device.pop().head(), "the chain's last was 0, so 1 comes next");
            assertFalse(ring.device.isBroken());
        }
    }

    @Test
    void theDevicePushesInPopOrderOnly() {
        try (Pair p = inOrder(8)) {
            p.add("a", 1, 0);
            p.add("b", 1, 0);
            p.driver.kick();
            int a = p.device.pop().head();
            int b = p.device.pop().head();
            assertThrows(IllegalStateException.class, () -> p.device.pushUsed(b, 0));
            assertFalse(p.device.isBroken(), "our own device's mistake is no ring violation");
            p.device.pushUsed(a, 0);
            p.device.pushUsed(b, 0);
            p.device.flushUsed();
            p.reap("a", "b");
        }
    }

    @Test
    void anUnpoppedChainIsExpectedAgain() {
        try (Pair p = inOrder(8)) {
            p.add("a", 1, 1);
            p.add("b", 1, 1);
            p.driver.kick();
            int a = p.device.pop().head();
            int b = p.device.pop().head();
            p.device.unpop(b);
            p.device.unpop(a);
            assertEquals(a, p.device.pop().head());
            assertEquals(b, p.device.pop().head());
            p.device.pushUsed(a, 16);
            p.device.pushUsed(b, 16);
            p.device.flushUsed();
            p.reap("a", "b");
        }
    }

    // ---- both sides ----

    /**
     * Driver and device interleaved at random through several wraps of the 16-bit indices, with direct and
     * indirect chains, read-only buffers, buffers written whole and in part, and publications of any size: every
     * token comes back exactly once, in order, with the length the device wrote and the bytes it wrote, which
     * the device derives from a checksum of the bytes it read.
     */
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3})
    void twoSidedRunThroughManyWraps(long seed) {
        final int queue = 16;
        final int maxElements = 4;
        final int total = 3 * 65536 + 1000;
        SplittableRandom rnd = new SplittableRandom(seed);
        try (Pair p = Pair.open(queue, maxElements, 3, DriverOptions.defaults().withInOrder(true),
                DeviceOptions.defaults().withInOrder(true))) {
            ScatterGather sg = new ScatterGather(maxElements);
            // Per token slot (token % queue, never two in flight at once): its elements and what the device did.
            long[][] addr = new long[queue][maxElements];
            int[][] len = new int[queue][maxElements];
            int[] readable = new int[queue];
            int[] count = new int[queue];
            long[] written = new long[queue];
            long[] checksum = new long[queue];
            ArrayDeque<long[]> popped = new ArrayDeque<>(); // {head, written bytes}, in pop order
            MemorySegment payload = p.arena.allocate((long) maxElements * Pair.SLOT_BYTES);
            int added = 0;
            int reaped = 0;
            int devicePopped = 0;
            while (reaped < total) {
                for (int n = rnd.nextInt(6); n > 0 && added < total && p.driver.inFlight() < queue; n--) {
                    int t = added % queue; // the token that used this slot before is reaped: fewer than queue in flight
                    int r = rnd.nextInt(maxElements + 1);
                    int w = r == 0 ? 1 + rnd.nextInt(maxElements) : rnd.nextInt(maxElements - r + 1);
                    sg.clear();
                    long sum = 0;
                    for (int e = 0; e < r + w; e++) {
                        long a = p.slot(t * maxElements + e);
                        int l = 1 + rnd.nextInt(Pair.SLOT_BYTES);
                        addr[t][e] = a;
                        len[t][e] = l;
                        if (e < r) {
                            for (int b = 0; b < l; b++) {
                                byte v = (byte) rnd.nextInt();
                                p.memory.set(ValueLayout.JAVA_BYTE, a, v);
                                sum = sum * 31 + v;
                                a++;
                            }
                            sg.readable(addr[t][e], l);
                        } else {
                            p.memory.asSlice(a, l).fill((byte) 0xEE);
                            sg.writable(a, l);
                        }
                    }
                    readable[t] = r;
                    count[t] = r + w;
                    checksum[t] = sum;
                    if (!p.driver.hasRoomFor(sg)) {
                        break; // token slot t is rewritten for the same token next time
                    }
                    p.driver.add(sg, added);
                    added++;
                }
                if (rnd.nextBoolean()) {
                    p.driver.kick();
                } else {
                    p.driver.publish();
                }
                for (int n = rnd.nextInt(8); n > 0; n--) {
                    DescriptorChain c = p.device.pop();
                    if (c == null) {
                        break;
                    }
                    long sum = 0;
                    for (int e = 0; e < c.readableCount(); e++) {
                        MemorySegment s = c.readable(e);
                        for (long b = 0; b < s.byteSize(); b++) {
                            sum = sum * 31 + s.get(ValueLayout.JAVA_BYTE, b);
                        }
                    }
                    int t = devicePopped % queue; // in order: the n-th pop is token n
                    assertEquals(checksum[t], sum, "the device read what the driver wrote, token " + devicePopped);
                    // Written whole two times in three (those coalesce), else in part; the payload is derived
                    // from the checksum of what the device read.
                    long w = rnd.nextInt(3) == 0 ? rnd.nextLong(c.writableBytes() + 1) : c.writableBytes();
                    for (long i = 0; i < w; i++) {
                        payload.set(ValueLayout.JAVA_BYTE, i, (byte) (sum * 31 + i));
                    }
                    assertEquals(w, c.scatter(0, payload, 0, w));
                    written[t] = w;
                    popped.add(new long[] {c.head(), w});
                    devicePopped++;
                }
                for (int n = rnd.nextInt(8); n > 0 && !popped.isEmpty(); n--) {
                    long[] b = popped.poll();
                    p.device.pushUsed((int) b[0], b[1]);
                }
                if (rnd.nextBoolean()) {
                    p.device.flushUsed();
                } else {
                    p.device.publishUsed();
                }
                for (int n = rnd.nextInt(10); n > 0; n--) {
                    Object token = p.driver.pollUsed();
                    if (token == null) {
                        break;
                    }
                    assertEquals(reaped, token, "tokens come back once each, in order");
                    int t = reaped % queue;
                    assertEquals(written[t], p.driver.lastUsedLength(), "token " + reaped);
                    long off = 0;
                    for (int e = readable[t]; e < count[t] && off < written[t]; e++) {
                        for (int i = 0; i < len[t][e] && off < written[t]; i++, off++) {
                            assertEquals((byte) (checksum[t] * 31 + off),
                                    p.memory.get(ValueLayout.JAVA_BYTE, addr[t][e] + i), "token " + reaped);
                        }
                    }
                    reaped++;
                }
            }
            assertEquals(total, p.device.counters().completions);
            assertEquals(total, p.driver.counters().completions);
            assertEquals(0, p.driver.inFlight());
            assertEquals(queue, p.driver.freeDescriptors());
            assertNull(p.driver.pollUsed());
            assertNull(p.device.pop());
            assertTrue(p.device.counters().usedIdxWrites > 0);
        }
    }
}
