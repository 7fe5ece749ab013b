package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.HostileRing;
import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.error.DescriptorLoopException;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.IndirectNotNegotiatedException;
import io.virtio4j.core.error.IndirectWithNextException;
import io.virtio4j.core.error.InvalidDescriptorIndexException;
import io.virtio4j.core.error.ChainTooLongException;
import io.virtio4j.core.error.InvalidIndirectTableException;
import io.virtio4j.core.error.NestedIndirectException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.ReadableAfterWritableException;
import io.virtio4j.core.error.RingViolationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.virtio4j.core.RingTestSupport.HostileRing.DATA;
import static io.virtio4j.core.RingTestSupport.HostileRing.GUEST_BYTES;
import static io.virtio4j.core.RingTestSupport.HostileRing.TABLES;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The device side against a hostile driver (virtqueue.md 2.3, 2.4): every ring here is forged byte by byte.
 * Each violation must raise its specific exception naming the field and the bad value, break this queue and
 * only this queue, and touch nothing outside the guest memory.
 */
class HostileRingTest {
    private static final int QSZ = 8;
    private static final int R = 0;
    private static final int NEXT = DESC_F_NEXT;
    private static final int WRITE = DESC_F_WRITE;
    private static final int INDIRECT = DESC_F_INDIRECT;

    private HostileRing ring;
    /** An independent queue over other memory, which must not notice the hostile one breaking. */
    private Pair healthy;

    @BeforeEach
    void open() {
        ring = HostileRing.open(QSZ, DeviceOptions.defaults());
        healthy = Pair.open(QSZ);
        healthy.roundTrip("before");
    }

    @AfterEach
    void close() {
        ring.close();
        healthy.close();
    }

    /** Pops, expects {@code type} naming {@code field} = {@code value}, and checks the aftermath. */
    private <T extends RingViolationException> T assertViolation(HostileRing r, Class<T> type, String field, long value) {
        int lastAvail = r.device.state().nextAvail();
        long popped = r.device.counters().buffers;
        T e = assertThrows(type, r.device::pop);
        assertEquals(field, e.field(), "field");
        assertEquals(value, e.value(), "value");
        assertBroken(r, e);
        assertEquals(lastAvail, r.device.state().nextAvail(), "a rejected chain is not consumed");
        assertEquals(popped, r.device.counters().buffers);
        return e;
    }

    private void assertBroken(HostileRing r, RingViolationException e) {
        assertTrue(r.device.isBroken());
        assertSame(e, r.device.violation());
        assertEquals(1, r.device.counters().errors);
        assertSame(e, assertThrows(QueueBrokenException.class, r.device::pop).violation());
        assertSame(e, assertThrows(QueueBrokenException.class, r.device::enableKicksOrFindPending).violation());
        assertSame(e, assertThrows(QueueBrokenException.class, r.device::flushUsed).violation());
        assertSame(e, assertThrows(QueueBrokenException.class, () -> r.device.pushUsed(0, 0)).violation());
        assertTrue(r.canariesIntact(), "memory around the guest memory was touched");
        healthy.roundTrip("after"); // an independent queue keeps working
        assertFalse(healthy.device.isBroken());
    }

    // ---- avail ring ----

    @Test
    void headIndexNotBelowQueueSize() {
        ring.makeAvailable(QSZ);
        assertViolation(ring, InvalidDescriptorIndexException.class, "avail.ring[0]", QSZ);
    }

    @Test
    void headIndexViolationNamesTheRingSlot() {
        ring.desc(0, DATA, 16, R, 0);
        ring.makeAvailable(0);
        ring.makeAvailable(0xFFFF);
        assertNotNull(ring.device.pop());
        assertViolation(ring, InvalidDescriptorIndexException.class, "avail.ring[1]", 0xFFFF);
    }

    @Test
    void headMadeAvailableTwiceWhileInFlight() {
        ring.desc(0, DATA, 16, R, 0);
        ring.makeAvailable(0);
        ring.makeAvailable(0);
        assertEquals(0, ring.device.pop().head());
        assertViolation(ring, InvalidDescriptorIndexException.class, "avail.ring[1]", 0);
    }

    @Test
    void availIdxJumpingByMoreThanTheQueueSize() {
        ring.setAvailIdx(QSZ + 1);
        assertViolation(ring, IndexJumpException.class, "avail.idx", QSZ + 1);
    }

    @Test
    void availIdxJumpIsAlsoCaughtWhenReEnablingKicks() {
        ring.setAvailIdx(0xFFFF); // "backwards" by one: 65535 entries ahead modulo 2^16
        IndexJumpException e = assertThrows(IndexJumpException.class, ring.device::enableKicksOrFindPending);
        assertEquals("avail.idx", e.field());
        assertEquals(0xFFFF, e.value());
        assertBroken(ring, e);
    }

    @Test
    void availIdxMayRunAFullQueueAhead() {
        for (int i = 0; i < QSZ; i++) {
            ring.desc(i, DATA + 16L * i, 16, R, 0);
            ring.makeAvailable(i);
        }
        for (int i = 0; i < QSZ; i++) {
            assertEquals(i, ring.device.pop().head());
        }
        assertNull(ring.device.pop());
        assertFalse(ring.device.isBroken());
    }

    // ---- descriptor indices and loops ----

    @Test
    void nextIndexNotBelowTableSize() {
        ring.desc(0, DATA, 16, R | NEXT, 1);
        ring.desc(1, DATA + 16, 16, R | NEXT, QSZ);
        ring.makeAvailable(0);
        assertViolation(ring, InvalidDescriptorIndexException.class, "desc[1].next", QSZ);
    }

    @Test
    void nextIndexNotBelowIndirectTableSize() {
        ring.desc(0, TABLES, 32, INDIRECT, 0);
        ring.indirect(TABLES, 0, DATA, 16, R | NEXT, 1);
        ring.indirect(TABLES, 1, DATA + 16, 16, R | NEXT, 2); // the table holds 2 descriptors
        ring.makeAvailable(0);
        assertViolation(ring, InvalidDescriptorIndexException.class, "indirect[1].next", 2);
    }

    @Test
    void descriptorLoop() {
        ring.desc(0, DATA, 16, R | NEXT, 1);
        ring.desc(1, DATA + 16, 16, R | NEXT, 0);
        ring.makeAvailable(0);
        DescriptorLoopException e = assertThrows(DescriptorLoopException.class, ring.device::pop);
        assertTrue(e.field().matches("desc\\[[01]]\\.next"), e.field());
        assertBroken(ring, e);
    }

    @Test
    void descriptorLoopNamesTheLinkThatClosedIt() {
        ring.desc(0, DATA, 16, R | NEXT, 1);
        ring.desc(1, DATA + 16, 16, R | NEXT, 0);
        ring.makeAvailable(0);
        assertViolation(ring, DescriptorLoopException.class, "desc[1].next", 0);
    }

    @Test
    void chainLongerThanQueueSizeThroughDirectPrefixAndIndirectTable() {
        // 4 direct descriptors, then an indirect table of 5: 9 elements in a queue of 8
        for (int i = 0; i < 4; i++) {
            ring.desc(i, DATA + 16L * i, 16, R | NEXT, i + 1);
        }
        ring.desc(4, TABLES, 5 * 16, INDIRECT, 0);
        for (int i = 0; i < 5; i++) {
            ring.indirect(TABLES, i, DATA + 64 + 16L * i, 16, i < 4 ? R | NEXT : R, i + 1);
        }
        ring.makeAvailable(0);
        assertViolation(ring, ChainTooLongException.class, "desc[4].len", 80);
    }

    @Test
    void chainOfExactlyQueueSizeThroughDirectPrefixAndIndirectTableIsAccepted() {
        for (int i = 0; i < 4; i++) {
            ring.desc(i, DATA + 16L * i, 16, R | NEXT, i + 1);
        }
        ring.desc(4, TABLES, 4 * 16, INDIRECT | WRITE, 0); // WRITE on the table descriptor is ignored
        for (int i = 0; i < 4; i++) {
            ring.indirect(TABLES, i, DATA + 64 + 16L * i, 16, i < 3 ? WRITE | NEXT : WRITE, i + 1);
        }
        ring.makeAvailable(0);
        DescriptorChain chain = ring.device.pop();
        assertEquals(QSZ, chain.count());
        assertEquals(4, chain.readableCount());
        assertEquals(4, chain.writableCount());
        assertEquals(64, chain.readableBytes());
        assertEquals(64, chain.writableBytes());
        for (int i = 0; i < QSZ; i++) {
            assertEquals(DATA + 16L * i, chain.offset(i), "element " + i);
        }
    }

    // ---- indirect descriptors ----

    @Test
    void indirectDescriptorInsideAnIndirectTable() {
        ring.desc(0, TABLES, 32, INDIRECT, 0);
        ring.indirect(TABLES, 0, DATA, 16, R | NEXT, 1);
        ring.indirect(TABLES, 1, TABLES + 256, 16, INDIRECT, 0);
        ring.indirect(TABLES + 256, 0, DATA + 16, 16, R, 0);
        ring.makeAvailable(0);
        assertViolation(ring, NestedIndirectException.class, "indirect[1].flags", INDIRECT);
    }

    @Test
    void indirectTableOfLengthZero() {
        ring.desc(0, TABLES, 0, INDIRECT, 0);
        ring.makeAvailable(0);
        assertViolation(ring, InvalidIndirectTableException.class, "desc[0].len", 0);
    }

    @Test
    void indirectTableLengthNotAMultipleOf16() {
        ring.desc(0, TABLES, 24, INDIRECT, 0);
        ring.indirect(TABLES, 0, DATA, 16, R, 0);
        ring.makeAvailable(0);
        assertViolation(ring, InvalidIndirectTableException.class, "desc[0].len", 24);
    }

    @Test
    void indirectTogetherWithNext() {
        ring.desc(0, TABLES, 16, INDIRECT | NEXT, 1);
        ring.desc(1, DATA + 16, 16, R, 0);
        ring.indirect(TABLES, 0, DATA, 16, R, 0);
        ring.makeAvailable(0);
        assertViolation(ring, IndirectWithNextException.class, "desc[0].flags", INDIRECT | NEXT);
    }

    @Test
    void indirectWhenNotNegotiated() {
        try (HostileRing plain = HostileRing.open(QSZ, DeviceOptions.defaults().withIndirectDesc(false))) {
            plain.desc(0, TABLES, 16, INDIRECT, 0);
            plain.indirect(TABLES, 0, DATA, 16, R, 0); // a well-formed table: only the feature is missing
            plain.makeAvailable(0);
            assertViolation(plain, IndirectNotNegotiatedException.class, "desc[0].flags", INDIRECT);
        }
    }

    @Test
    void indirectTableOutsideMemory() {
        ring.desc(0, GUEST_BYTES - 16, 32, INDIRECT, 0);
        ring.makeAvailable(0);
        assertViolation(ring, AddressOutOfRangeException.class, "desc[0].addr", GUEST_BYTES - 16);
    }

    // ---- element addresses ----

    @Test
    void addressPlusLengthOverflowing64Bits() {
        ring.desc(0, 0xFFFFFFFFFFFFFFF0L, 0x100, R, 0);
        ring.makeAvailable(0);
        AddressOutOfRangeException e = assertViolation(ring, AddressOutOfRangeException.class, "desc[0].addr",
                0xFFFFFFFFFFFFFFF0L);
        assertTrue(e.getMessage().contains("overflows"), e.getMessage());
    }

    @Test
    void writableElementOutsideMemory() {
        // guest address GUEST_BYTES is where the upper canary zone starts in the backing segment
        ring.desc(0, DATA, 16, R | NEXT, 1);
        ring.desc(1, GUEST_BYTES, 16, WRITE, 0);
        ring.makeAvailable(0);
        assertViolation(ring, AddressOutOfRangeException.class, "desc[1].addr", GUEST_BYTES);
    }

    @Test
    void elementStraddlingTheEndOfMemory() {
        ring.desc(0, GUEST_BYTES - 8, 16, WRITE, 0);
        ring.makeAvailable(0);
        assertViolation(ring, AddressOutOfRangeException.class, "desc[0].addr", GUEST_BYTES - 8);
    }

    @Test
    void elementInsideAnIndirectTableOutsideMemory() {
        ring.desc(0, TABLES, 32, INDIRECT, 0);
        ring.indirect(TABLES, 0, DATA, 16, R | NEXT, 1);
        // guest address -16 would land in the lower canary zone if the device did raw offset arithmetic
        ring.indirect(TABLES, 1, -16L, 16, WRITE, 0);
        ring.makeAvailable(0);
        assertViolation(ring, AddressOutOfRangeException.class, "indirect[1].addr", -16L);
    }

    @Test
    void lastByteOfMemoryIsAccepted() {
        ring.desc(0, GUEST_BYTES - 16, 16, WRITE, 0);
        ring.makeAvailable(0);
        DescriptorChain chain = ring.device.pop();
        assertEquals(GUEST_BYTES - 16, chain.offset(0));
        // writing more than the element holds stops at its end: the canary above stays intact
        assertEquals(16, chain.scatter(0, ring.arena.allocate(64).fill((byte) 1), 0, 64));
        assertTrue(ring.canariesIntact());
    }

    /** Adjacent regions: the buffer is split, one element each (RegionSpanningTest has the rest). */
    @Test
    void bufferSpanningTwoRegionsIsSplit() {
        try (HostileRing two = HostileRing.openTwoRegions(QSZ, DeviceOptions.defaults())) {
            two.desc(0, GUEST_BYTES - 8, 16, R, 0);
            two.makeAvailable(0);
            DescriptorChain chain = two.device.pop();
            assertEquals(2, chain.count());
            assertSame(two.memory, chain.region(0));
            assertEquals(8, chain.length(0));
            assertSame(two.second, chain.region(1));
            assertEquals(0, chain.offset(1));
            assertEquals(8, chain.length(1));
        }
    }

    @Test
    void bufferInsideTheSecondRegionIsAccepted() {
        try (HostileRing two = HostileRing.openTwoRegions(QSZ, DeviceOptions.defaults())) {
            two.desc(0, DATA, 16, R | NEXT, 1);
            two.desc(1, GUEST_BYTES + 32, 16, WRITE, 0);
            two.makeAvailable(0);
            DescriptorChain chain = two.device.pop();
            assertEquals(2, chain.count());
            assertSame(two.memory, chain.region(0));
            assertSame(two.second, chain.region(1));
            assertEquals(32, chain.offset(1));
        }
    }

    // ---- element order ----

    @Test
    void readableAfterWritable() {
        ring.desc(0, DATA, 16, WRITE | NEXT, 1);
        ring.desc(1, DATA + 16, 16, R, 0);
        ring.makeAvailable(0);
        assertViolation(ring, ReadableAfterWritableException.class, "desc[1].flags", R);
    }

    @Test
    void readableAfterWritableAcrossIntoAnIndirectTable() {
        ring.desc(0, DATA, 16, WRITE | NEXT, 1);
        ring.desc(1, TABLES, 16, INDIRECT, 0);
        ring.indirect(TABLES, 0, DATA + 16, 16, R, 0);
        ring.makeAvailable(0);
        assertViolation(ring, ReadableAfterWritableException.class, "indirect[0].flags", R);
    }

    // ---- recovery ----

    @Test
    void restartForgetsTheViolation() {
        ring.makeAvailable(QSZ);
        assertThrows(InvalidDescriptorIndexException.class, ring.device::pop);
        ring.desc(3, DATA, 16, R, 0);
        ring.avail.entry(0, 3);
        ring.device.restart(QueueState.split(0, 0));
        assertFalse(ring.device.isBroken());
        assertNull(ring.device.violation());
        assertEquals(3, ring.device.pop().head());
    }
}
