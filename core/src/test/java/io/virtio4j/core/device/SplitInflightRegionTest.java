package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport;
import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.error.InvalidDescriptorIndexException;
import io.virtio4j.core.error.InvalidInflightRegionException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

import static io.virtio4j.core.layout.InflightLayout.SPLIT_DESC_NUM;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_ENTRY_COUNTER;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_ENTRY_INFLIGHT;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_ENTRY_NEXT;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_FEATURES;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_LAST_BATCH_HEAD;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_USED_IDX;
import static io.virtio4j.core.layout.InflightLayout.SPLIT_VERSION;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A split queue's inflight region as the front-end may leave it: a fresh region full of garbage, a crash inside a
 * publication, and every field a hostile front-end can forge, each refused with {@link InvalidInflightRegionException}
 * naming it and its value, the queue broken, nothing resubmitted, not a byte of the region (or around it) written.
 */
class SplitInflightRegionTest {
    private static final int SIZE = 8;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final long CANARY_BYTES = 256;
    private static final byte CANARY = (byte) 0xA5;

    private static long entry(int i) {
        return InflightLayout.SPLIT_HEADER_SIZE + 16L * i;
    }

    /** A pair whose region sits between canaries, written by a real back-end: 5 popped, 2 of them published. */
    private static final class Fixture implements AutoCloseable {
        final Pair p = Pair.open(SIZE);
        final MemorySegment outer;
        final MemorySegment region;
        final List<Integer> heads = new ArrayList<>();

        Fixture() {
            long bytes = InflightLayout.queueRegionBytes(RingFormat.SPLIT, SIZE);
            outer = RingTestSupport.allocate(p.arena, bytes + 2 * CANARY_BYTES).fill(CANARY);
            region = outer.asSlice(CANARY_BYTES, bytes).fill((byte) 0);
            p.device.restart(p.device.state(), region);
            for (int i = 0; i < 5; i++) {
                p.add(i, 1, 0);
            }
            p.driver.kick();
            for (int i = 0; i < 5; i++) {
                heads.add(p.device.pop().head());
            }
            p.device.pushUsed(heads.get(3), 0);
            p.device.pushUsed(heads.get(1), 0);
            p.device.publishUsed();
        }

        DeviceQueue fresh() {
            return DeviceQueue.over(p.areas, p.guest, DeviceOptions.defaults(), new RingTestSupport.CountingNotifier());
        }

        QueueState afterDisconnect() {
            int used = p.used.idxAcquire();
            return QueueState.split(used, used);
        }

        boolean canariesIntact() {
            for (long i = 0; i < outer.byteSize(); i++) {
                if ((i < CANARY_BYTES || i >= CANARY_BYTES + region.byteSize())
                        && outer.get(ValueLayout.JAVA_BYTE, i) != CANARY) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public void close() {
            p.close();
        }
    }

    @Test
    void aRegionABackEndWroteResubmitsWhatItHeldInFetchOrder() {
        try (Fixture f = new Fixture()) {
            DeviceQueue q = f.fresh();
            assertEquals(3, q.restart(f.afterDisconnect(), f.region));
            assertEquals(QueueState.split(2 + 3, 2), q.state(), "the available position moves past the resubmitted");
            assertTrue(q.enableKicksOrFindPending());
            assertEquals(f.heads.get(0), q.pop().head());
            assertEquals(f.heads.get(2), q.pop().head());
            assertEquals(f.heads.get(4), q.pop().head());
            assertNull(q.pop(), "nothing else: the ring's other buffers were used");
        }
    }

    /** A crash after the used.idx store and after k of the batch's flags were cleared (store order: the list). */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3})
    void aBatchPublishedButNotClearedIsNotResubmitted(int cleared) {
        try (Fixture f = new Fixture()) {
            f.p.reap(3, 1);
            int before = f.region.get(U16, SPLIT_USED_IDX);
            // A batch of three: heads 0, 2 and 4 pushed, in that order; the publication stored used.idx.
            int[] order = {f.heads.get(2), f.heads.get(0), f.heads.get(4)};
            for (int h : order) {
                f.p.device.pushUsed(h, 0);
            }
            f.p.device.publishUsed();
            // Roll the region back to where the crash left it: the flags not yet cleared, used_idx not yet stored.
            for (int k = cleared; k < 3; k++) {
                f.region.set(ValueLayout.JAVA_BYTE, entry(order[k]) + SPLIT_ENTRY_INFLIGHT, (byte) 1);
            }
            f.region.set(U16, SPLIT_USED_IDX, (short) before);
            DeviceQueue q = f.fresh();
            assertEquals(0, q.restart(f.afterDisconnect(), f.region), "the whole batch was published");
            assertEquals(5, f.region.get(U16, SPLIT_USED_IDX), "used_idx caught up with the ring");
            assertNull(q.pop());
            f.p.reap(2, 0, 4);
        }
    }

    @Test
    void aFreshRegionFullOfGarbageIsNotTrusted() {
        try (Pair p = Pair.open(SIZE)) {
            MemorySegment region = RingTestSupport.allocate(p.arena, InflightLayout.queueRegionBytes(RingFormat.SPLIT, SIZE));
            region.fill((byte) 1); // every entry "in flight", counters, links, last_batch_head, used_idx: garbage
            region.set(U16, SPLIT_VERSION, (short) 0);
            p.add("a", 1, 1);
            p.driver.kick();
            assertEquals(0, p.device.restart(p.device.state(), region));
            assertEquals(1, region.get(U16, SPLIT_VERSION));
            assertEquals(SIZE, region.get(U16, SPLIT_DESC_NUM));
            byte[] entries = region.asSlice(InflightLayout.SPLIT_HEADER_SIZE).toArray(ValueLayout.JAVA_BYTE);
            assertArrayEquals(new byte[entries.length], entries, "every entry zeroed");
            p.serveOne();
            p.reap("a");
        }
    }

    @Test
    void duplicateCountersResubmitInIndexOrder() {
        try (Fixture f = new Fixture()) {
            for (int h : List.of(f.heads.get(0), f.heads.get(2), f.heads.get(4))) {
                f.region.set(U64, entry(h) + SPLIT_ENTRY_COUNTER, 7);
            }
            DeviceQueue q = f.fresh();
            assertEquals(3, q.restart(f.afterDisconnect(), f.region));
            int[] expected = {f.heads.get(0), f.heads.get(2), f.heads.get(4)};
            Arrays.sort(expected);
            assertEquals(expected[0], q.pop().head());
            assertEquals(expected[1], q.pop().head());
            assertEquals(expected[2], q.pop().head());
        }
    }

    @Test
    void theCounterContinuesAfterTheHighest() {
        try (Fixture f = new Fixture()) {
            f.region.set(U64, entry(f.heads.get(2)) + SPLIT_ENTRY_COUNTER, 1000);
            DeviceQueue q = f.fresh();
            assertEquals(3, q.restart(f.afterDisconnect(), f.region));
            for (int i = 0; i < 3; i++) {
                q.pop();
            }
            f.p.add("new", 1, 1);
            f.p.driver.kick();
            int head = q.pop().head();
            assertEquals(1001, f.region.get(U64, entry(head) + SPLIT_ENTRY_COUNTER));
        }
    }

    /** A head the region resubmits is walked like one from the ring: a bad chain breaks the queue at pop. */
    @Test
    void aResubmittedHeadWhoseDescriptorIsBadBreaksTheQueueAtPop() {
        try (Fixture f = new Fixture()) {
            int h = f.heads.get(0);
            io.virtio4j.core.layout.Descriptors.write(f.p.splitAreas().descTable(), 0, h, 0, 16,
                    io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT, 99);
            DeviceQueue q = f.fresh();
            assertEquals(3, q.restart(f.afterDisconnect(), f.region));
            RingViolationException e = assertThrows(InvalidDescriptorIndexException.class, q::pop);
            assertEquals("desc[" + h + "].next", e.field());
            assertTrue(q.isBroken());
        }
    }

    @Test
    void aRegionOfTheWrongSizeIsRefusedBeforeAnythingChanges() {
        try (Fixture f = new Fixture()) {
            DeviceQueue q = f.fresh();
            assertThrows(IllegalArgumentException.class,
                    () -> q.restart(f.afterDisconnect(), f.region.asSlice(0, f.region.byteSize() - 64)));
            assertFalse(q.isBroken());
        }
    }

    // ---- one test per forged field ----

    private static void assertRefused(String field, long value, Consumer<Fixture> forge) {
        try (Fixture f = new Fixture()) {
            forge.accept(f);
            byte[] before = f.region.toArray(ValueLayout.JAVA_BYTE);
            DeviceQueue q = f.fresh();
            InvalidInflightRegionException e = assertThrows(InvalidInflightRegionException.class,
                    () -> q.restart(f.afterDisconnect(), f.region));
            assertEquals(field, e.field());
            assertEquals(value, e.value());
            assertTrue(q.isBroken());
            assertSame(e, q.violation());
            assertThrows(QueueBrokenException.class, q::pop, "nothing resubmitted, nothing popped");
            assertArrayEquals(before, f.region.toArray(ValueLayout.JAVA_BYTE), "the region is not written");
            assertTrue(f.canariesIntact(), "nothing around the region is touched");
        }
    }

    @Test
    void versionOtherThanZeroOrOne() {
        assertRefused("inflight.version", 2, f -> f.region.set(U16, SPLIT_VERSION, (short) 2));
    }

    @Test
    void nonZeroFeatures() {
        assertRefused("inflight.features", 4, f -> f.region.set(U64, SPLIT_FEATURES, 4));
    }

    @Test
    void descNumThatIsNotTheQueueSize() {
        assertRefused("inflight.desc_num", 16, f -> f.region.set(U16, SPLIT_DESC_NUM, (short) 16));
    }

    @Test
    void lastBatchHeadBeyondTheQueue() {
        assertRefused("inflight.last_batch_head", 8, f -> f.region.set(U16, SPLIT_LAST_BATCH_HEAD, (short) 8));
    }

    @Test
    void usedIdxMoreThanAQueueBehindTheRing() {
        // The ring's used.idx is 2: a region used_idx of 65529 makes a batch of 9, more than the queue.
        assertRefused("inflight.used_idx", 65529, f -> f.region.set(U16, SPLIT_USED_IDX, (short) 65529));
    }

    @Test
    void batchLinkBeyondTheQueue() {
        // The last batch is heads[3] then heads[1]: used_idx one batch back makes recovery follow heads[1]'s link.
        assertRefused("inflight.desc[1].next", 0xFFFF, f -> {
            f.region.set(U16, SPLIT_USED_IDX, (short) 0);
            f.region.set(U16, entry(f.heads.get(1)) + SPLIT_ENTRY_NEXT, (short) 0xFFFF);
        });
    }

    @Test
    void batchLinkLoop() {
        // A batch of three that links heads[1] back to itself.
        assertRefused("inflight.desc[1].next", 1, f -> {
            assertEquals(1, f.heads.get(1));
            f.region.set(U16, SPLIT_USED_IDX, (short) 65535);
            f.region.set(U16, entry(1) + SPLIT_ENTRY_NEXT, (short) 1);
        });
    }

    @Test
    void inflightFlagThatIsNeitherZeroNorOne() {
        assertRefused("inflight.desc[6].inflight", 2,
                f -> f.region.set(ValueLayout.JAVA_BYTE, entry(6) + SPLIT_ENTRY_INFLIGHT, (byte) 2));
    }

    @Test
    void counterFromTwoToTheSixtyThreeOn() {
        assertRefused("inflight.desc[0].counter", Long.MIN_VALUE, f -> {
            assertEquals(0, f.heads.get(0));
            f.region.set(U64, entry(0) + SPLIT_ENTRY_COUNTER, Long.MIN_VALUE);
        });
    }
}
