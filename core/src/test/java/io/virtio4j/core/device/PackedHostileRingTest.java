package io.virtio4j.core.device;

import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.error.ChainTooLargeException;
import io.virtio4j.core.error.ChainTooLongException;
import io.virtio4j.core.error.ZeroLengthElementException;
import io.virtio4j.core.error.ForgedUsedFlagsException;
import io.virtio4j.core.error.IncompleteListException;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.IndirectNotNegotiatedException;
import io.virtio4j.core.error.IndirectWithNextException;
import io.virtio4j.core.error.InvalidDescriptorIndexException;
import io.virtio4j.core.error.InvalidIndirectTableException;
import io.virtio4j.core.error.NestedIndirectException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.ReadableAfterWritableException;
import io.virtio4j.core.error.ReservedEventModeException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.device.PackedHostileRing.DATA;
import static io.virtio4j.core.device.PackedHostileRing.GUEST_BYTES;
import static io.virtio4j.core.device.PackedHostileRing.TABLES;
import static io.virtio4j.core.device.PackedHostileRing.r;
import static io.virtio4j.core.device.PackedHostileRing.w;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_AVAIL;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_USED;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The packed device side against a hostile driver (virtqueue.md 3.2-3.4): each ring here is forged. Every
 * violation must raise its specific exception naming the field and the bad value, consume nothing, break this
 * queue and only this queue (a second packed ring keeps serving), and touch nothing outside the guest memory.
 */
class PackedHostileRingTest {
    private static final int QSZ = 5;
    private static final int AVAIL1 = PackedLayout.availBits(true);

    private PackedHostileRing ring;
    private PackedHostileRing healthy;
    private int healthyIds;

    @BeforeEach
    void open() {
        ring = new PackedHostileRing(QSZ, DeviceOptions.defaults());
        healthy = new PackedHostileRing(QSZ, DeviceOptions.defaults());
        healthy.roundTrip(healthyIds++);
    }

    @AfterEach
    void close() {
        ring.close();
        healthy.close();
    }

    private <T extends RingViolationException> T assertViolation(PackedHostileRing r, Class<T> type, String field,
                                                                 long value) {
        return assertViolation(r, type, field, value, r.device::pop);
    }

    /** Runs {@code call}, expects {@code type} naming {@code field} = {@code value}, and checks the aftermath. */
    private <T extends RingViolationException> T assertViolation(PackedHostileRing r, Class<T> type, String field,
                                                                 long value, Executable call) {
        QueueState before = r.device.state();
        long popped = r.device.counters().buffers;
        T e = assertThrows(type, call);
        assertEquals(field, e.field(), "field");
        assertEquals(value, e.value(), "value");
        assertEquals(before, r.device.state(), "a rejected buffer is not consumed");
        assertEquals(popped, r.device.counters().buffers);
        assertTrue(r.device.isBroken());
        assertSame(e, r.device.violation());
        assertEquals(1, r.device.counters().errors);
        assertSame(e, assertThrows(QueueBrokenException.class, r.device::pop).violation());
        assertSame(e, assertThrows(QueueBrokenException.class, r.device::enableKicksOrFindPending).violation());
        assertSame(e, assertThrows(QueueBrokenException.class, r.device::flushUsed).violation());
        assertSame(e, assertThrows(QueueBrokenException.class, () -> r.device.pushUsed(0, 0)).violation());
        assertTrue(r.canariesIntact(), "memory around the guest memory was touched");
        for (int i = 0; i < 2 * QSZ; i++) {
            healthy.roundTrip(healthyIds++ % QSZ); // an independent queue keeps working, across its wrap
        }
        assertFalse(healthy.device.isBroken());
        return e;
    }

    /** Pops the buffer just added and checks it is {@code id}. */
    private void popOk(int id) {
        DescriptorChain c = ring.device.pop();
        assertNotNull(c);
        assertEquals(id, c.head());
    }

    // ---- element lengths (the split device's rules) ----

    @Test
    void zeroLengthElement() {
        ring.add(0, r(DATA, 8), w(DATA + 64, 0));
        assertViolation(ring, ZeroLengthElementException.class, "desc[1].len", 0);
    }

    @Test
    void zeroLengthElementInAnIndirectTable() {
        ring.addIndirect(0, PackedHostileRing.TABLES, r(DATA, 0), w(DATA + 64, 8));
        assertViolation(ring, ZeroLengthElementException.class, "indirect[0].len", 0);
    }

    @Test
    void aBufferLongerThanTwoToTheThirtyTwoBytes() {
        // named before any translation: the second element's length is what takes the total past 2^32
        ring.add(0, r(DATA, 8), w(DATA + 64, -1));
        assertViolation(ring, ChainTooLargeException.class, "desc[1].len", 0xFFFF_FFFFL);
    }

    // ---- ids ----

    @Test
    void idNotBelowQueueSize() {
        ring.add(QSZ, r(DATA, 8));
        assertViolation(ring, InvalidDescriptorIndexException.class, "desc[0].id", QSZ);
    }

    @Test
    void idOfAListIsTheLastDescriptorsAndIsChecked() {
        ring.add(0xFFFF, r(DATA, 8), w(DATA + 64, 8));
        assertViolation(ring, InvalidDescriptorIndexException.class, "desc[1].id", 0xFFFF);
    }

    @Test
    void idAlreadyInFlight() {
        ring.add(1, r(DATA, 8));
        popOk(1);
        ring.add(1, r(DATA, 8));
        assertViolation(ring, InvalidDescriptorIndexException.class, "desc[1].id", 1);
    }

    @Test
    void idsOfBatchedBuffersAreCheckedOneByOne() {
        try (PackedHostileRing eight = new PackedHostileRing(8, DeviceOptions.defaults())) {
            eight.add(0, r(DATA, 8));
            eight.add(1, r(DATA, 8));
            eight.add(0, r(DATA, 8)); // id 0 again, in the same cache line: the batched check does not vouch for it
            eight.add(3, r(DATA, 8));
            assertEquals(0, eight.device.pop().head());
            assertEquals(1, eight.device.pop().head());
            assertViolation(eight, InvalidDescriptorIndexException.class, "desc[2].id", 0);
        }
    }

    /**
     * A line of four available one-descriptor buffers (the batched check vouches for their flags only) whose third
     * is bad: the first two pop, the third is refused as a lone buffer would be, naming its slot's field and value.
     */
    private <T extends RingViolationException> void badThirdOfALine(PackedHostileRing.Elem third, int thirdId,
                                                                    Class<T> type, String field, long value) {
        try (PackedHostileRing eight = new PackedHostileRing(8, DeviceOptions.defaults())) {
            eight.add(0, r(DATA, 8));
            eight.add(1, w(DATA + 64, 8));
            eight.add(thirdId, third);
            eight.add(3, r(DATA + 192, 8));
            assertEquals(0, eight.device.pop().head());
            assertEquals(1, eight.device.pop().head());
            assertViolation(eight, type, field, value);
        }
    }

    @Test
    void aBatchedBufferWithAnIdNotBelowTheQueueSize() {
        badThirdOfALine(r(DATA + 128, 8), 8, InvalidDescriptorIndexException.class, "desc[2].id", 8);
    }

    @Test
    void aBatchedBufferOfLengthZero() {
        badThirdOfALine(w(DATA + 128, 0), 2, ZeroLengthElementException.class, "desc[2].len", 0);
    }

    @Test
    void aBatchedBufferOutsideGuestMemory() {
        badThirdOfALine(r(GUEST_BYTES - 4, 8), 2, AddressOutOfRangeException.class, "desc[2].addr", GUEST_BYTES - 4);
    }

    // ---- AVAIL/USED bits ----

    @Test
    void usedBitsOfTheDevicesOwnLapAtTheNextSlot() {
        ring.desc(0, DATA, 8, 0);
        ring.flags(0, DESC_F_AVAIL | DESC_F_USED);
        assertViolation(ring, ForgedUsedFlagsException.class, "desc[0].flags", DESC_F_AVAIL | DESC_F_USED);
    }

    @Test
    void usedBitsOfTheDevicesOwnLapAfterAWrap() {
        for (int i = 0; i < QSZ; i++) {
            ring.add(i, r(DATA, 8));
            popOk(i);
            ring.device.pushUsed(i, 0);
            ring.device.flushUsed();
            assertNotNull(ring.reap());
        }
        assertFalse(ring.device.state().availWrap(), "the device wrapped");
        ring.flags(0, 0); // AVAIL = USED = 0 = the device's wrap counter now
        assertViolation(ring, ForgedUsedFlagsException.class, "desc[0].flags", 0);
    }

    @Test
    void forgedFlagsFoundByTheReCheckOfEnable() {
        ring.device.disableKicks();
        ring.flags(0, DESC_F_AVAIL | DESC_F_USED);
        assertViolation(ring, ForgedUsedFlagsException.class, "desc[0].flags", DESC_F_AVAIL | DESC_F_USED,
                ring.device::enableKicksOrFindPending);
    }

    // ---- lists ----

    @Test
    void listContinuingIntoASlotNotAvailable() {
        ring.desc(0, DATA, 8, 0);
        ring.desc(1, DATA + 64, 8, 0);
        ring.flags(0, DESC_F_NEXT | AVAIL1); // slot 1 still holds its zero flags: not available
        assertViolation(ring, IncompleteListException.class, "desc[1].flags", 0);
    }

    @Test
    void listContinuingAcrossTheEndIntoASlotOfTheOldLap() {
        for (int i = 0; i < QSZ - 1; i++) {
            ring.add(i, r(DATA, 8));
            popOk(i);
            ring.device.pushUsed(i, 0);
            ring.device.flushUsed();
            assertNotNull(ring.reap());
        }
        // slot 4 (wrap 1) says NEXT; slot 0 still holds the used flags of lap 1, not available with wrap 0
        int last = QSZ - 1;
        ring.desc(last, DATA, 8, 0);
        ring.flags(last, DESC_F_NEXT | AVAIL1);
        int slot0 = ring.flagsAt(0);
        assertEquals(DESC_F_AVAIL | DESC_F_USED, slot0);
        assertViolation(ring, IncompleteListException.class, "desc[0].flags", slot0);
    }

    @Test
    void listLongerThanTheQueue() {
        for (int i = QSZ - 1; i >= 0; i--) {
            ring.desc(i, DATA + 64L * i, 8, 0);
            ring.flags(i, DESC_F_NEXT | AVAIL1);
        }
        // all five slots available, every one with NEXT: the sixth would be slot 0 again
        assertViolation(ring, ChainTooLongException.class, "desc[4].flags", DESC_F_NEXT | AVAIL1);
    }

    @Test
    void moreSlotsOutstandingThanTheRing() {
        ring.add(0, r(DATA, 8), r(DATA, 8), r(DATA, 8));
        popOk(0);
        ring.add(1, r(DATA, 8), r(DATA, 8));
        popOk(1);
        // all five slots are in flight; a driver that makes slot 0 available again overwrote a buffer not used yet
        ring.add(2, r(DATA, 8));
        assertViolation(ring, IndexJumpException.class, "desc[0].flags", PackedLayout.availBits(false));
    }

    @Test
    void readableAfterWritable() {
        ring.add(0, w(DATA, 8), r(DATA + 64, 8));
        assertViolation(ring, ReadableAfterWritableException.class, "desc[1].flags",
                PackedLayout.availBits(true));
    }

    // ---- indirect ----

    @Test
    void indirectTogetherWithNext() {
        ring.desc(1, DATA, 8, 0);
        ring.flags(1, AVAIL1);
        ring.desc(0, TABLES, 16, 0);
        ring.flags(0, DESC_F_INDIRECT | DESC_F_NEXT | AVAIL1);
        assertViolation(ring, IndirectWithNextException.class, "desc[0].flags", DESC_F_INDIRECT | DESC_F_NEXT | AVAIL1);
    }

    @Test
    void indirectInsideANextList() {
        ring.indirect(TABLES, 0, DATA, 8, 0);
        ring.desc(1, TABLES, 16, 0);
        ring.flags(1, DESC_F_INDIRECT | AVAIL1);
        ring.desc(0, DATA, 8, 0);
        ring.flags(0, DESC_F_NEXT | AVAIL1);
        assertViolation(ring, IndirectWithNextException.class, "desc[1].flags", DESC_F_INDIRECT | AVAIL1);
    }

    @Test
    void indirectInsideAnIndirectTable() {
        ring.indirect(TABLES + 256, 0, DATA, 8, 0);
        ring.addIndirect(0, TABLES, r(DATA, 8), r(TABLES + 256, 16));
        ring.indirect(TABLES, 1, TABLES + 256, 16, DESC_F_INDIRECT);
        assertViolation(ring, NestedIndirectException.class, "indirect[1].flags", DESC_F_INDIRECT);
    }

    @Test
    void indirectTableOfLengthZero() {
        ring.desc(0, TABLES, 0, 0);
        ring.flags(0, DESC_F_INDIRECT | AVAIL1);
        assertViolation(ring, InvalidIndirectTableException.class, "desc[0].len", 0);
    }

    @Test
    void indirectTableLengthNotAMultipleOf16() {
        ring.desc(0, TABLES, 24, 0);
        ring.flags(0, DESC_F_INDIRECT | AVAIL1);
        assertViolation(ring, InvalidIndirectTableException.class, "desc[0].len", 24);
    }

    @Test
    void indirectTableLargerThanTheQueue() {
        ring.desc(0, TABLES, (QSZ + 1) * 16, 0);
        ring.flags(0, DESC_F_INDIRECT | AVAIL1);
        assertViolation(ring, ChainTooLongException.class, "desc[0].len", (QSZ + 1) * 16);
    }

    @Test
    void indirectWithoutTheFeature() {
        try (PackedHostileRing plain = new PackedHostileRing(QSZ, DeviceOptions.defaults().withIndirectDesc(false))) {
            plain.addIndirect(0, TABLES, r(DATA, 8));
            assertViolation(plain, IndirectNotNegotiatedException.class, "desc[0].flags", DESC_F_INDIRECT | AVAIL1);
        }
    }

    @Test
    void readableAfterWritableInsideAnIndirectTable() {
        ring.addIndirect(0, TABLES, r(DATA, 8), w(DATA + 64, 8), r(DATA + 128, 8));
        assertViolation(ring, ReadableAfterWritableException.class, "indirect[2].flags", 0);
    }

    @Test
    void indirectEntriesAreReadAsPackedDescriptors() {
        // flags at byte 14 as in the ring; byte 12 (the reserved id) holds what would be WRITE in a split table
        ring.addIndirect(0, TABLES, r(DATA, 8), w(DATA + 64, 8));
        ring.memory.set(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, TABLES + 12, (short) DESC_F_WRITE);
        DescriptorChain c = ring.device.pop();
        assertNotNull(c);
        assertEquals(1, c.readableCount());
        assertEquals(1, c.writableCount());
    }

    // ---- addresses ----

    @Test
    void directAddressOutsideGuestMemory() {
        ring.add(0, r(GUEST_BYTES - 4, 8));
        assertViolation(ring, AddressOutOfRangeException.class, "desc[0].addr", GUEST_BYTES - 4);
    }

    @Test
    void laterDescriptorOfAListOutsideGuestMemory() {
        ring.add(0, r(DATA, 8), w(-16L, 32));
        assertViolation(ring, AddressOutOfRangeException.class, "desc[1].addr", -16L);
    }

    @Test
    void indirectTableOutsideGuestMemory() {
        ring.desc(0, GUEST_BYTES - 16, 32, 0);
        ring.flags(0, DESC_F_INDIRECT | AVAIL1);
        assertViolation(ring, AddressOutOfRangeException.class, "desc[0].addr", GUEST_BYTES - 16);
    }

    @Test
    void indirectEntryOutsideGuestMemory() {
        ring.addIndirect(0, TABLES, r(DATA, 8), w(GUEST_BYTES, 1));
        assertViolation(ring, AddressOutOfRangeException.class, "indirect[1].addr", GUEST_BYTES);
    }

    // ---- event suppression ----

    @Test
    void reservedDriverEventMode() {
        ring.add(0, w(DATA, 8));
        popOk(0);
        ring.device.pushUsed(0, 8);
        ring.driverEvent.release(0, 3);
        ReservedEventModeException e = assertThrows(ReservedEventModeException.class, ring.device::flushUsed);
        assertEquals("driverEvent.flags", e.field());
        assertEquals(3, e.value());
        // the used descriptor was published before the decision read the mode: the driver has it
        assertEquals(new QueueState(1, true, 1, true), ring.device.state());
        assertTrue(ring.device.isBroken());
        assertSame(e, ring.device.violation());
        assertSame(e, assertThrows(QueueBrokenException.class, ring.device::pop).violation());
        assertSame(e, assertThrows(QueueBrokenException.class, ring.device::flushUsed).violation());
        assertEquals(0, ring.calls.signals());
        assertTrue(ring.canariesIntact());
        healthy.roundTrip(1);
        assertFalse(healthy.device.isBroken());
    }

    /** The event suppression areas are checked when the ring is built: too small or misaligned is refused. */
    @Test
    void ringAreasRefuseSegmentsTooSmallOrMisaligned() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4096, 64);
            MemorySegment desc = seg.asSlice(0, 16 * QSZ);
            MemorySegment event = seg.asSlice(1024, 4);
            assertNotNull(new PackedRingAreas(QSZ, desc, event, seg.asSlice(2048, 4)));
            assertThrows(IllegalArgumentException.class,
                    () -> new PackedRingAreas(QSZ, seg.asSlice(0, 16 * QSZ - 1), event, seg.asSlice(2048, 4)));
            assertThrows(IllegalArgumentException.class,
                    () -> new PackedRingAreas(QSZ, seg.asSlice(8, 16 * QSZ), event, seg.asSlice(2048, 4)));
            assertThrows(IllegalArgumentException.class,
                    () -> new PackedRingAreas(QSZ, desc, seg.asSlice(1024, 3), seg.asSlice(2048, 4)));
            assertThrows(IllegalArgumentException.class,
                    () -> new PackedRingAreas(QSZ, desc, seg.asSlice(1026, 4), seg.asSlice(2048, 4)));
            assertThrows(IllegalArgumentException.class,
                    () -> new PackedRingAreas(QSZ, desc, event, seg.asSlice(2048, 2)));
            assertThrows(IllegalArgumentException.class,
                    () -> new PackedRingAreas(QSZ, desc, event, seg.asSlice(2049, 4)));
        }
    }
}
