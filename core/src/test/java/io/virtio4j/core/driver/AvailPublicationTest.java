package io.virtio4j.core.driver;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.error.RingFullException;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.policy.AvailPublication;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.RingTestSupport.bytes;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** When the driver publishes avail.idx, how many descriptors a buffer takes, and what happens when they run out. */
class AvailPublicationTest {

    private static Pair open(int queueSize, AvailPublication publication) {
        return Pair.open(queueSize, DriverOptions.defaults().withEventIdx(false).withPublication(publication)
                .withAdaptiveInterval(1, 8), DeviceOptions.defaults().withEventIdx(false));
    }

    private int added;

    /** Adds a one-element buffer and checks the avail.idx the device can now see. */
    private void addExpectingIdx(Pair p, int expectedIdx) {
        p.add(added++, 1, 0);
        assertEquals(expectedIdx, p.avail.idxAcquire(), "avail.idx after add #" + added);
    }

    @Test
    void eagerPublishesOnEveryAdd() {
        try (Pair p = open(8, AvailPublication.EAGER)) {
            for (int i = 1; i <= 5; i++) {
                addExpectingIdx(p, i);
                assertEquals(i, p.driver.counters().availIdxWrites);
            }
            assertTrue(p.driver.kickPrepare());
            assertEquals(5, p.driver.counters().availIdxWrites, "nothing left to publish");
        }
    }

    @Test
    void lazyPublishesOnlyInKickPrepare() {
        try (Pair p = open(8, AvailPublication.LAZY)) {
            for (int i = 0; i < 5; i++) {
                addExpectingIdx(p, 0);
                assertNull(p.device.pop(), "the device cannot see an unpublished buffer");
            }
            assertEquals(0, p.driver.counters().availIdxWrites);
            assertTrue(p.driver.kickPrepare());
            assertEquals(5, p.avail.idxAcquire());
            assertEquals(1, p.driver.counters().availIdxWrites, "one store for the whole batch");
            for (int i = 0; i < 5; i++) {
                assertNotNull(p.device.pop());
            }
        }
    }

    /**
     * ADAPTIVE with interval [1, 8] against a device that suppresses kicks (NO_NOTIFY): the interval starts at 1,
     * doubles after each suppressed kick up to 8, and drops back to 1 after a needed kick.
     */
    @Test
    void adaptiveDoublesWhileKicksAreSuppressedAndDropsAfterANeededKick() {
        try (Pair p = open(64, AvailPublication.ADAPTIVE)) {
            addExpectingIdx(p, 1);
            assertTrue(p.driver.kickPrepare(), "the device has not suppressed kicks yet");
            p.device.disableKicks();

            addExpectingIdx(p, 2); // interval 1
            assertFalse(p.driver.kickPrepare()); // -> 2
            assertEquals(2, p.driver.counters().availIdxWrites);

            addExpectingIdx(p, 2);
            addExpectingIdx(p, 4);
            assertFalse(p.driver.kickPrepare()); // -> 4
            assertEquals(3, p.driver.counters().availIdxWrites);

            for (int i = 0; i < 3; i++) {
                addExpectingIdx(p, 4);
            }
            addExpectingIdx(p, 8);
            assertFalse(p.driver.kickPrepare()); // -> 8
            assertEquals(4, p.driver.counters().availIdxWrites);

            for (int round = 1; round <= 2; round++) { // 8 is the maximum: it stays there
                int base = 8 * round;
                for (int i = 0; i < 7; i++) {
                    addExpectingIdx(p, base);
                }
                addExpectingIdx(p, base + 8);
                assertFalse(p.driver.kickPrepare());
                assertEquals(4 + round, p.driver.counters().availIdxWrites);
            }

            assertTrue(p.device.enableKicksOrFindPending());
            addExpectingIdx(p, 24); // still interval 8
            assertTrue(p.driver.kickPrepare(), "the device re-enabled kicks");
            assertEquals(25, p.avail.idxAcquire(), "kickPrepare publishes what the policy held back");
            assertEquals(7, p.driver.counters().availIdxWrites);

            addExpectingIdx(p, 26); // back to interval 1
            addExpectingIdx(p, 27);
            assertEquals(9, p.driver.counters().availIdxWrites);
            assertEquals(5, p.driver.counters().kicksSuppressed);
        }
    }

    @Test
    void ringFullReportsNeededAndFreeDescriptors() {
        try (Pair p = Pair.open(4)) {
            p.add("a", 1, 2);
            assertEquals(1, p.driver.freeDescriptors());

            ScatterGather two = new ScatterGather(4).readable(p.slot(10), 16).writable(p.slot(11), 16);
            assertFalse(p.driver.hasRoomFor(two));
            RingFullException e = assertThrows(RingFullException.class, () -> p.driver.add(two, "b"));
            assertEquals(2, e.needed());
            assertEquals(1, e.free());
            assertFalse(p.driver.isBroken(), "a full ring is not a violation");
            assertEquals(1, p.driver.freeDescriptors(), "a refused add changes nothing");
            assertEquals(1, p.driver.inFlight());
            assertEquals(1, p.avail.idxAcquire());

            p.add("c", 1, 0);
            assertEquals(0, p.driver.freeDescriptors());
            e = assertThrows(RingFullException.class, () -> p.add("d", 1, 0));
            assertEquals(1, e.needed());
            assertEquals(0, e.free());

            p.driver.kick();
            p.popAndPush();
            p.popAndPush();
            assertNull(p.device.pop(), "the refused buffers never reached the ring");
            p.device.flushUsed();
            p.reap("a", "c");

            assertThrows(IllegalArgumentException.class, () -> p.add("e", 3, 2),
                    "a chain longer than the queue can never fit: a caller error, not a full ring");
            assertFalse(p.driver.isBroken());
            assertEquals(4, p.driver.freeDescriptors());
        }
    }

    @Test
    void indirectBufferTakesOneDescriptorAndPopsAsOneChain() {
        try (Pair p = Pair.withIndirect(16, 8, 3)) {
            long r0 = p.slot(0);
            long r1 = p.slot(1);
            long w0 = p.slot(2);
            long w1 = p.slot(3);
            for (int i = 0; i < 16; i++) {
                p.memory.set(JAVA_BYTE, r0 + i, (byte) (i + 1));
            }
            for (int i = 0; i < 8; i++) {
                p.memory.set(JAVA_BYTE, r1 + i, (byte) (i + 17));
            }
            p.driver.add(p.sg().readable(r0, 16).readable(r1, 8).writable(w0, 32).writable(w1, 4), "indirect");
            assertEquals(15, p.driver.freeDescriptors());

            MemorySegment desc = p.splitAreas().descTable();
            assertEquals(DESC_F_INDIRECT, Descriptors.flags(desc, 0, 0));
            assertEquals(p.indirectTables, Descriptors.addr(desc, 0, 0), "head 0 uses table 0");
            assertEquals(4 * 16, Descriptors.len(desc, 0, 0));

            assertTrue(p.driver.kick());
            DescriptorChain chain = p.device.pop();
            assertEquals(0, chain.head());
            assertEquals(4, chain.count());
            assertEquals(2, chain.readableCount());
            assertEquals(2, chain.writableCount());
            assertEquals(24, chain.readableBytes());
            assertEquals(36, chain.writableBytes());
            long[] offsets = {r0, r1, w0, w1};
            long[] lengths = {16, 8, 32, 4};
            for (int i = 0; i < 4; i++) {
                assertEquals(offsets[i], chain.offset(i), "offset of element " + i);
                assertEquals(lengths[i], chain.length(i), "length of element " + i);
                assertEquals(i >= 2, chain.isWritable(i), "direction of element " + i);
            }

            MemorySegment copy = p.arena.allocate(24);
            assertEquals(24, chain.gather(0, copy, 0, 64));
            assertArrayEquals(bytes(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                    17, 18, 19, 20, 21, 22, 23, 24), bytes(copy, 0, 24));
            assertEquals(36, chain.scatter(0, p.arena.allocate(64).fill((byte) 0x5A), 0, 64));
            p.device.pushUsed(chain.head(), 36);
            p.device.flushUsed();

            assertEquals("indirect", p.driver.pollUsed());
            assertEquals(36, p.driver.lastUsedLength());
            assertEquals(16, p.driver.freeDescriptors());
            assertEquals((byte) 0x5A, p.memory.get(JAVA_BYTE, w1 + 3));
        }
    }

    @Test
    void indirectIsUsedOnlyFromTheThresholdUpToTheTableSize() {
        try (Pair p = Pair.withIndirect(16, 8, 3)) {
            p.add("two", 1, 1); // below the threshold: direct, descriptors 0 -> 1
            assertEquals(14, p.driver.freeDescriptors());
            assertEquals(DESC_F_NEXT, Descriptors.flags(p.splitAreas().descTable(), 0, 0));

            p.add("three", 2, 1); // at the threshold: indirect, head 2, table 2
            assertEquals(13, p.driver.freeDescriptors());
            assertEquals(DESC_F_INDIRECT, Descriptors.flags(p.splitAreas().descTable(), 0, 2));
            assertEquals(p.indirectTables + 2 * 8 * 16, Descriptors.addr(p.splitAreas().descTable(), 0, 2));

            p.add("nine", 5, 4); // more than a table holds: direct again
            assertEquals(4, p.driver.freeDescriptors());

            p.driver.kick();
            int[] counts = {2, 3, 9};
            for (int count : counts) {
                DescriptorChain chain = p.device.pop();
                assertEquals(count, chain.count());
                p.device.pushUsed(chain.head(), 0);
            }
            p.device.flushUsed();
            p.reap("two", "three", "nine");
            assertEquals(16, p.driver.freeDescriptors());
        }
    }
}
