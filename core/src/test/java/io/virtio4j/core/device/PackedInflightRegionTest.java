package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport;
import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.error.InvalidDescriptorIndexException;
import io.virtio4j.core.error.InvalidInflightRegionException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import static io.virtio4j.core.layout.InflightLayout.PACKED_DESC_NUM;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_ADDR;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_FLAGS;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_ID;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_INFLIGHT;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_LAST;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_NEXT;
import static io.virtio4j.core.layout.InflightLayout.PACKED_ENTRY_NUM;
import static io.virtio4j.core.layout.InflightLayout.PACKED_FEATURES;
import static io.virtio4j.core.layout.InflightLayout.PACKED_FREE_HEAD;
import static io.virtio4j.core.layout.InflightLayout.PACKED_OLD_FREE_HEAD;
import static io.virtio4j.core.layout.InflightLayout.PACKED_OLD_USED_IDX;
import static io.virtio4j.core.layout.InflightLayout.PACKED_OLD_USED_WRAP_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.PACKED_USED_IDX;
import static io.virtio4j.core.layout.InflightLayout.PACKED_USED_WRAP_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.PACKED_VERSION;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A packed queue's inflight region as the front-end may leave it: a crash between publishing a batch in the ring
 * and committing it (also after the driver has reused the batch's first slot), and every field a hostile front-end
 * can forge, each refused with {@link InvalidInflightRegionException} naming it and its value, the queue broken,
 * nothing resubmitted, not a byte of the region (or around it) written; copies that pass recovery but not a pop's
 * checks break the queue at the pop, naming the region's entry.
 *
 * <p>The fixture: a queue of 8, buffers of two descriptors (one readable, one writable); a, b, c popped (entries
 * 0-1, 2-3, 4-5), b pushed and published. In flight: a (head entry 0) and c (head entry 4); free list 2, 3, 6, 7.
 */
class PackedInflightRegionTest {
    private static final int SIZE = 8;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static long entry(int i) {
        return InflightLayout.PACKED_HEADER_SIZE + 32L * i;
    }

    private static InflightRig fixture() {
        InflightRig rig = new InflightRig(RingFormat.PACKED, SIZE, false, false, 42, 1, 1);
        rig.run("add:3", "pop", "pop", "pop", "push:1", "publish");
        return rig;
    }

    private static DeviceQueue fresh(InflightRig rig) {
        return DeviceQueue.over(rig.pair.areas, rig.pair.guest, rig.options, new RingTestSupport.CountingNotifier());
    }

    private static void set8(MemorySegment region, long offset, int value) {
        region.set(ValueLayout.JAVA_BYTE, offset, (byte) value);
    }

    @Test
    void theFixtureRegionIsWhatTheClassCommentSays() {
        try (InflightRig rig = fixture()) {
            MemorySegment r = rig.region;
            assertEquals(1, r.get(ValueLayout.JAVA_BYTE, entry(0) + PACKED_ENTRY_INFLIGHT));
            assertEquals(0, r.get(ValueLayout.JAVA_BYTE, entry(2) + PACKED_ENTRY_INFLIGHT));
            assertEquals(1, r.get(ValueLayout.JAVA_BYTE, entry(4) + PACKED_ENTRY_INFLIGHT));
            assertEquals(2, r.get(U16, PACKED_OLD_FREE_HEAD));
            assertEquals(2, r.get(U16, PACKED_OLD_USED_IDX));
            DeviceQueue q = fresh(rig);
            assertEquals(2, q.restart(rig.stateAfterDisconnect(), rig.region));
            assertEquals(new QueueState(6, true, 2, true), q.state(), "available = used + the 4 resubmitted slots");
        }
    }

    /**
     * The back-end dies after the ring's release store of a batch and before committing it in the region (with
     * none, one or all of the batch's flags cleared), and the driver may meanwhile have reaped the batch and made
     * its first slot available again for the next lap: the batch is committed, never resubmitted.
     */
    @ParameterizedTest(name = "cleared {0}, slot reused {1}")
    @CsvSource({"0, false", "1, false", "2, false", "0, true", "2, true"})
    void aBatchPublishedButNotCommittedIsNotResubmitted(int cleared, boolean reused) {
        try (InflightRig rig = fixture()) {
            rig.run("push:1", "push:0"); // c then a: a batch of two buffers, four slots
            byte[] snapshot = rig.region.toArray(ValueLayout.JAVA_BYTE);
            rig.step("publish"); // the driver reaps c and a
            byte[] after = rig.region.toArray(ValueLayout.JAVA_BYTE);
            MemorySegment.copy(MemorySegment.ofArray(snapshot), 0, rig.region, 0, snapshot.length);
            List<Integer> batchHeads = new ArrayList<>();
            for (int i = 0; i < SIZE; i++) {
                long flag = entry(i) + PACKED_ENTRY_INFLIGHT;
                if (snapshot[(int) flag] == 1 && after[(int) flag] == 0) {
                    batchHeads.add(i);
                }
            }
            assertEquals(2, batchHeads.size());
            for (int k = 0; k < cleared; k++) {
                set8(rig.region, entry(batchHeads.get(k)) + PACKED_ENTRY_INFLIGHT, 0);
            }
            if (reused) {
                // Three buffers of two slots from slot 6: 6-7, 0-1, 2-3, the last in the batch's first used slot.
                rig.run("add:3");
                int slot2 = PackedDescriptors.flagsPlainLoad(((PackedRingAreas) rig.pair.areas).descRing(), 2);
                assertTrue(PackedLayout.isAvailable(slot2, false), "slot 2 made available for the next lap");
            }
            assertEquals(0, rig.crash(), "the whole batch was published");
            rig.drain();
            rig.assertAllBackOnce();
        }
    }

    /** The back-end dies in a pop after marking the buffer in flight and before moving the free list past it. */
    @Test
    void aCrashInsideAPopBeforeTheFreeListMovedResubmitsTheBuffer() {
        try (InflightRig rig = fixture()) {
            rig.add(1);
            short freeHead = rig.region.get(U16, PACKED_OLD_FREE_HEAD);
            rig.step("pop");
            rig.region.set(U16, PACKED_OLD_FREE_HEAD, freeHead);
            assertEquals(3, rig.crash());
            rig.drain();
            rig.assertAllBackOnce();
        }
    }

    /** The back-end dies in an unpop after clearing the flag and before the entries rejoin the free list. */
    @Test
    void aCrashInsideAnUnpopLeaksNoEntry() {
        try (InflightRig rig = fixture()) {
            rig.add(1);
            rig.step("pop");
            short freeHead = rig.region.get(U16, PACKED_OLD_FREE_HEAD);
            rig.step("unpop");
            rig.region.set(U16, PACKED_OLD_FREE_HEAD, freeHead);
            assertEquals(2, rig.crash());
            rig.drain();
            // Every entry is free again: a ring's worth of buffers in flight fits.
            rig.run("add:4", "pop", "pop", "pop", "pop");
            rig.crash();
            rig.drain();
            rig.assertAllBackOnce();
        }
    }

    // ---- one test per forged field ----

    private static void assertRefused(String field, long value, Consumer<InflightRig> forge) {
        try (InflightRig rig = fixture()) {
            forge.accept(rig);
            byte[] before = rig.region.toArray(ValueLayout.JAVA_BYTE);
            DeviceQueue q = fresh(rig);
            InvalidInflightRegionException e = assertThrows(InvalidInflightRegionException.class,
                    () -> q.restart(rig.stateAfterDisconnect(), rig.region));
            assertEquals(field, e.field());
            assertEquals(value, e.value());
            assertTrue(q.isBroken());
            assertSame(e, q.violation());
            assertThrows(QueueBrokenException.class, q::pop, "nothing resubmitted, nothing popped");
            assertArrayEquals(before, rig.region.toArray(ValueLayout.JAVA_BYTE), "the region is not written");
            assertTrue(rig.canariesIntact(), "nothing around the region is touched");
        }
    }

    @Test
    void version() {
        assertRefused("inflight.version", 3, r -> r.region.set(U16, PACKED_VERSION, (short) 3));
    }

    @Test
    void features() {
        assertRefused("inflight.features", 1, r -> r.region.set(U64, PACKED_FEATURES, 1));
    }

    @Test
    void descNum() {
        assertRefused("inflight.desc_num", 4, r -> r.region.set(U16, PACKED_DESC_NUM, (short) 4));
    }

    @Test
    void freeHead() {
        assertRefused("inflight.free_head", 8, r -> r.region.set(U16, PACKED_FREE_HEAD, (short) 8));
    }

    @Test
    void oldFreeHead() {
        assertRefused("inflight.old_free_head", 9, r -> r.region.set(U16, PACKED_OLD_FREE_HEAD, (short) 9));
    }

    @Test
    void usedIdx() {
        assertRefused("inflight.used_idx", 8, r -> r.region.set(U16, PACKED_USED_IDX, (short) 8));
    }

    @Test
    void oldUsedIdx() {
        assertRefused("inflight.old_used_idx", 0xFFFF, r -> r.region.set(U16, PACKED_OLD_USED_IDX, (short) -1));
    }

    @Test
    void usedWrapCounter() {
        assertRefused("inflight.used_wrap_counter", 2, r -> set8(r.region, PACKED_USED_WRAP_COUNTER, 2));
    }

    @Test
    void oldUsedWrapCounter() {
        assertRefused("inflight.old_used_wrap_counter", 255, r -> set8(r.region, PACKED_OLD_USED_WRAP_COUNTER, 255));
    }

    @Test
    void batchLongerThanTheRing() {
        // Committed at slot 2, wrap 1; slot 1 with wrap 1 is 15 slots on.
        assertRefused("inflight.used_idx", 1, r -> r.region.set(U16, PACKED_USED_IDX, (short) 1));
    }

    @Test
    void batchBufferLongerThanTheBatch() {
        // A pending batch of 2 slots from slot 2, shown published in the ring, whose buffer claims 3 entries.
        assertRefused("inflight.desc[2].num", 3, r -> {
            r.region.set(U16, PACKED_USED_IDX, (short) 4);
            r.region.set(U16, entry(2) + PACKED_ENTRY_NUM, (short) 3);
            PackedDescriptors.flagsPlain(((PackedRingAreas) r.pair.areas).descRing(), 2, PackedLayout.usedBits(true));
        });
    }

    @Test
    void freeListLinkOutOfRange() {
        assertRefused("inflight.desc[6].next", 9, r -> r.region.set(U16, entry(6) + PACKED_ENTRY_NEXT, (short) 9));
    }

    @Test
    void freeListLoop() {
        // 2, 3, 6, 7, then back to 2: the ninth step is refused at entry 2.
        assertRefused("inflight.desc[2].next", 3, r -> r.region.set(U16, entry(7) + PACKED_ENTRY_NEXT, (short) 2));
    }

    @Test
    void numZero() {
        assertRefused("inflight.desc[0].num", 0, r -> r.region.set(U16, entry(0) + PACKED_ENTRY_NUM, (short) 0));
    }

    @Test
    void numBeyondTheQueue() {
        assertRefused("inflight.desc[0].num", 9, r -> r.region.set(U16, entry(0) + PACKED_ENTRY_NUM, (short) 9));
    }

    @Test
    void lastThatIsNotTheBuffersLastEntry() {
        assertRefused("inflight.desc[0].last", 5, r -> r.region.set(U16, entry(0) + PACKED_ENTRY_LAST, (short) 5));
    }

    @Test
    void bufferLinkOutOfRange() {
        assertRefused("inflight.desc[0].next", 8, r -> r.region.set(U16, entry(0) + PACKED_ENTRY_NEXT, (short) 8));
    }

    @Test
    void buffersThatShareAnEntry() {
        assertRefused("inflight.desc[4].next", 1, r -> r.region.set(U16, entry(4) + PACKED_ENTRY_NEXT, (short) 1));
    }

    @Test
    void headEntryInsideAnotherBuffer() {
        assertRefused("inflight.desc[1].inflight", 1, r -> {
            set8(r.region, entry(1) + PACKED_ENTRY_INFLIGHT, 1);
            r.region.set(U16, entry(1) + PACKED_ENTRY_NUM, (short) 1);
            r.region.set(U16, entry(1) + PACKED_ENTRY_LAST, (short) 1);
        });
    }

    @Test
    void inflightFlag() {
        assertRefused("inflight.desc[6].inflight", 2, r -> set8(r.region, entry(6) + PACKED_ENTRY_INFLIGHT, 2));
    }

    @Test
    void counter() {
        assertRefused("inflight.desc[4].counter", -1, r -> r.region.set(U64, entry(4) + PACKED_ENTRY_COUNTER, -1));
    }

    // ---- copies that pass recovery and fail the pop's checks ----

    private static RingViolationException refusedAtPop(Consumer<InflightRig> forge, Class<? extends RingViolationException> type,
                                                       int pops) {
        try (InflightRig rig = fixture()) {
            forge.accept(rig);
            DeviceQueue q = fresh(rig);
            assertEquals(2, q.restart(rig.stateAfterDisconnect(), rig.region));
            for (int i = 1; i < pops; i++) {
                q.pop();
            }
            RingViolationException e = assertThrows(type, q::pop);
            assertTrue(q.isBroken());
            assertTrue(rig.canariesIntact());
            return e;
        }
    }

    @Test
    void copiedFlagsWithNextOnTheLastDescriptor() {
        RingViolationException e = refusedAtPop(r -> {
            long f = entry(1) + PACKED_ENTRY_FLAGS;
            r.region.set(U16, f, (short) (r.region.get(U16, f) | PackedLayout.DESC_F_NEXT));
        }, InvalidInflightRegionException.class, 1);
        assertEquals("inflight.desc[1].flags", e.field());
    }

    @Test
    void copiedAddressOutsideGuestMemory() {
        RingViolationException e = refusedAtPop(r -> r.region.set(U64, entry(0) + PACKED_ENTRY_ADDR, 1L << 40),
                AddressOutOfRangeException.class, 1);
        assertEquals("inflight.desc[0].addr", e.field());
    }

    @Test
    void twoResubmittedBuffersWithOneId() {
        RingViolationException e = refusedAtPop(r -> r.region.set(U16, entry(5) + PACKED_ENTRY_ID,
                r.region.get(U16, entry(1) + PACKED_ENTRY_ID)), InvalidDescriptorIndexException.class, 2);
        assertEquals("inflight.desc[5].id", e.field());
    }
}
