package io.virtio4j.core.device;

import io.virtio4j.core.device.PackedHostileRing.Elem;
import io.virtio4j.core.device.PackedHostileRing.Used;
import io.virtio4j.core.error.InvalidQueueStateException;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.ordering.Ordering;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;

import static io.virtio4j.core.device.PackedHostileRing.DATA;
import static io.virtio4j.core.device.PackedHostileRing.TABLES;
import static io.virtio4j.core.device.PackedHostileRing.r;
import static io.virtio4j.core.device.PackedHostileRing.w;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DESC;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DISABLE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_ENABLE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_WRAP_BIT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The packed device queue against a correct driver played by {@link PackedHostileRing} (virtqueue.md 3). */
class PackedDeviceQueueTest {
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Guest bytes reserved per buffer id for its elements. */
    private static final long PER_ID = 256;
    private static final int ELEM = 16;

    private static DeviceOptions options() {
        return DeviceOptions.defaults();
    }

    /** A buffer shape, chosen per buffer: elements at the id's own data area, maybe behind an indirect table. */
    private static int addShaped(PackedHostileRing ring, int id, int shape, Random rnd) {
        long base = DATA + id * PER_ID;
        Elem[] elems = switch (shape) {
            case 0 -> new Elem[]{w(base, ELEM)};
            case 1 -> new Elem[]{r(base, ELEM)};
            case 2 -> new Elem[]{r(base, ELEM), w(base + 64, ELEM)};
            default -> new Elem[]{r(base, ELEM), r(base + 32, ELEM), w(base + 64, ELEM), w(base + 96, ELEM)};
        };
        for (Elem e : elems) {
            if (!e.writable()) {
                byte[] b = new byte[e.len()];
                rnd.nextBytes(b);
                MemorySegment.copy(b, 0, ring.memory, ValueLayout.JAVA_BYTE, e.addr(), b.length);
            } else {
                ring.memory.asSlice(e.addr(), e.len()).fill((byte) 0);
            }
        }
        if (shape == 4) {
            ring.addIndirect(id, TABLES + id * 64L * 4, elems);
            return 1;
        }
        ring.add(id, elems);
        return elems.length;
    }

    private static long crc(MemorySegment seg, long offset, long len) {
        CRC32 c = new CRC32();
        c.update(seg.asSlice(offset, len).asByteBuffer());
        return c.getValue();
    }

    /** CRC of the chain's readable part as the device gathers it. */
    private static long readableCrc(DescriptorChain c) {
        CRC32 crc = new CRC32();
        for (int i = 0; i < c.readableCount(); i++) {
            crc.update(c.readable(i).asByteBuffer());
        }
        return crc.getValue();
    }

    /** What the driver expects back in a buffer: the CRC of its readable part, computed from its own memory. */
    private static long driverCrc(PackedHostileRing ring, int id, int shape) {
        long base = DATA + id * PER_ID;
        CRC32 crc = new CRC32();
        switch (shape) {
            case 0 -> { }
            case 1, 2 -> crc.update(ring.memory.asSlice(base, ELEM).asByteBuffer());
            default -> {
                crc.update(ring.memory.asSlice(base, ELEM).asByteBuffer());
                crc.update(ring.memory.asSlice(base + 32, ELEM).asByteBuffer());
            }
        }
        return crc.getValue();
    }

    private static long firstWritable(int id, int shape) {
        return DATA + id * PER_ID + (shape == 0 ? 0 : 64);
    }

    /**
     * Single, chained, indirect and mixed buffers through rings of 5 and 7 (not powers of two) over many laps,
     * completed out of order: every buffer comes back exactly once with its id, its length and WRITE exactly when
     * the device wrote, the used bits of the driver's lap, and the CRC of its readable part in its writable one.
     */
    @ParameterizedTest(name = "size {0} {1}")
    @CsvSource({"5, WEAK", "7, WEAK", "7, STRONG"})
    void servesMixedBuffersAcrossWrapsOutOfOrder(int size, Ordering ordering) {
        Random rnd = new Random(size * 7919L);
        try (PackedHostileRing ring = new PackedHostileRing(size, options().withOrdering(ordering))) {
            ArrayDeque<Integer> freeIds = new ArrayDeque<>();
            for (int i = 0; i < size; i++) {
                freeIds.add(i);
            }
            int[] shapeOf = new int[size];
            long[] expectedLen = new long[size];
            boolean[] pushed = new boolean[size];
            long added = 0;
            long returned = 0;
            int wrapFlips = 0;
            boolean lastWrap = true;
            for (int round = 0; round < 400; round++) {
                // the driver adds what fits
                int want = 1 + rnd.nextInt(size);
                for (int k = 0; k < want && !freeIds.isEmpty(); k++) {
                    int shape = rnd.nextInt(5);
                    int slots = shape == 4 ? 1 : shape == 3 ? 4 : shape == 2 ? 2 : 1;
                    if (slots > ring.freeSlots()) {
                        break;
                    }
                    int id = freeIds.poll();
                    shapeOf[id] = shape;
                    assertEquals(slots, addShaped(ring, id, shape, rnd));
                    added++;
                }
                // the device pops everything, checks the data, completes in a shuffled order
                List<Integer> popped = new ArrayList<>();
                DescriptorChain c;
                while ((c = ring.device.pop()) != null) {
                    int id = c.head();
                    assertEquals(driverCrc(ring, id, shapeOf[id]), readableCrc(c), "readable data of id " + id);
                    long written = 0;
                    if (c.writableBytes() > 0) {
                        MemorySegment tmp = MemorySegment.ofArray(new long[1]);
                        tmp.set(U64, 0, readableCrc(c));
                        assertEquals(8, c.scatter(0, tmp, 0, 8));
                        written = 8 + rnd.nextInt((int) c.writableBytes() - 8 + 1);
                    }
                    expectedLen[id] = written;
                    popped.add(id);
                }
                Collections.shuffle(popped, rnd);
                int half = popped.size() / 2;
                for (int i = 0; i < popped.size(); i++) {
                    int id = popped.get(i);
                    ring.device.pushUsed(id, expectedLen[id]);
                    pushed[id] = true;
                    if (i == half) {
                        ring.device.publishUsed(); // two publications in some rounds
                    }
                }
                ring.device.flushUsed();
                // the driver reaps: every pushed id once
                Used u;
                int reaped = 0;
                while ((u = ring.reap()) != null) {
                    int id = u.id();
                    assertTrue(pushed[id], "id " + id + " came back without being pushed, or twice");
                    pushed[id] = false;
                    assertEquals(expectedLen[id], u.len(), "len of id " + id);
                    assertEquals(expectedLen[id] > 0, (u.flags() & DESC_F_WRITE) != 0, "WRITE of id " + id);
                    if (expectedLen[id] > 0) {
                        assertEquals(driverCrc(ring, id, shapeOf[id]),
                                ring.memory.get(U64, firstWritable(id, shapeOf[id])), "data of id " + id);
                    }
                    freeIds.add(id);
                    reaped++;
                    returned++;
                }
                assertEquals(popped.size(), reaped);
                QueueState s = ring.device.state();
                assertEquals(new QueueState(ring.availPos(), ring.availWrap(), ring.usedPos(), ring.usedWrap()), s);
                if (s.availWrap() != lastWrap) {
                    wrapFlips++;
                    lastWrap = s.availWrap();
                }
            }
            assertEquals(added, returned);
            assertEquals(size, freeIds.size());
            assertEquals(added, ring.device.counters().buffers);
            assertEquals(added, ring.device.counters().completions);
            assertTrue(wrapFlips > 20, "the ring wrapped " + wrapFlips + " times");
            assertTrue(ring.canariesIntact());
        }
    }

    @Test
    void unpopGivesBackTheLastBufferOnly() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            ring.add(3, r(DATA, 8), w(DATA + 64, 8));
            ring.add(1, w(DATA + 128, 8));
            DescriptorChain a = ring.device.pop();
            assertEquals(3, a.head());
            assertEquals(1, ring.device.pop().head());
            assertThrows(IllegalStateException.class, () -> ring.device.unpop(3));
            assertThrows(IllegalStateException.class, () -> ring.device.unpop(0));
            ring.device.unpop(1);
            assertEquals(new QueueState(2, true, 0, true), ring.device.state());
            ring.device.unpop(3);
            assertEquals(QueueState.INITIAL, ring.device.state());
            assertEquals(0, ring.device.counters().buffers);
            assertEquals(3, ring.device.pop().head());
            ring.device.pushUsed(3, 8);
            assertThrows(IllegalStateException.class, () -> ring.device.unpop(3), "pushed already");
            assertEquals(1, ring.device.pop().head());
            ring.device.pushUsed(1, 0);
            ring.device.flushUsed();
            assertEquals(3, ring.reap().id());
            assertEquals(1, ring.reap().id());
            assertNull(ring.reap());
            assertFalse(ring.device.isBroken());
        }
    }

    @Test
    void unpopForgetsBatchedFlags() {
        try (PackedHostileRing ring = new PackedHostileRing(8, options())) {
            for (int id = 0; id < 4; id++) {
                ring.add(id, w(DATA + 64L * id, 8));
            }
            assertEquals(0, ring.device.pop().head());
            long reads = ring.device.counters().availIdxReads;
            ring.device.unpop(0);
            assertEquals(0, ring.device.pop().head());
            assertTrue(ring.device.counters().availIdxReads > reads, "the flags were loaded again");
            for (int id = 1; id < 4; id++) {
                assertEquals(id, ring.device.pop().head());
            }
            assertNull(ring.device.pop());
        }
    }

    @Test
    void pushUsedRefusesWhatWasNotPoppedOrTooLong() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            ring.add(2, r(DATA, 8), w(DATA + 64, 16));
            assertThrows(IllegalStateException.class, () -> ring.device.pushUsed(2, 0));
            ring.device.pop();
            assertThrows(IllegalStateException.class, () -> ring.device.pushUsed(5, 0));
            assertThrows(IllegalStateException.class, () -> ring.device.pushUsed(-1, 0));
            assertThrows(IllegalArgumentException.class, () -> ring.device.pushUsed(2, 17));
            assertThrows(IllegalArgumentException.class, () -> ring.device.pushUsed(2, -1));
            ring.device.pushUsed(2, 16);
            assertThrows(IllegalStateException.class, () -> ring.device.pushUsed(2, 16));
            assertFalse(ring.device.isBroken());
        }
    }

    /**
     * Used descriptors pushed are invisible to the driver until published: the first one's flags are held back
     * (later ones are already stored, behind it), and one publication makes the whole batch visible.
     */
    @Test
    void pushedDescriptorsAppearWithOnePublication() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            ring.add(0, w(DATA, 8));
            ring.add(1, w(DATA + 64, 8));
            ring.add(2, r(DATA + 128, 8));
            for (int id = 0; id < 3; id++) {
                ring.device.pushUsed(ring.device.pop().head(), id == 2 ? 0 : 8);
            }
            int avail1 = PackedLayout.availBits(true);
            assertEquals(avail1 | DESC_F_WRITE, ring.flagsAt(0), "the first is held back");
            assertTrue(PackedLayout.isUsed(ring.flagsAt(1), true), "later ones are stored when pushed");
            assertNull(ring.reap(), "the driver polls the first slot only: nothing yet");
            ring.device.publishUsed();
            assertEquals(1, ring.device.counters().usedIdxWrites);
            int used1 = PackedLayout.usedBits(true);
            assertEquals(new Used(0, 8, used1 | DESC_F_WRITE), ring.reap());
            assertEquals(new Used(1, 8, used1 | DESC_F_WRITE), ring.reap());
            assertEquals(new Used(2, 0, used1), ring.reap(), "nothing written: no WRITE");
            assertNull(ring.reap());
            ring.device.publishUsed();
            assertEquals(1, ring.device.counters().usedIdxWrites, "nothing new: no store");
        }
    }

    // ---- state and restart ----

    @Test
    void stateRoundTripsThroughRestartAndThePackedBase() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            for (int i = 0; i < 3; i++) {
                ring.roundTrip(i); // two slots each
            }
            QueueState s = ring.device.state();
            assertEquals(new QueueState(1, false, 1, false), s);
            assertEquals(s, QueueState.fromPackedBase(s.toPackedBase()));
            PackedDeviceQueue resumed = new PackedDeviceQueue(ring.areas, ring.guest, options(), ring.calls);
            assertEquals(QueueState.INITIAL, resumed.state());
            resumed.restart(QueueState.fromPackedBase(s.toPackedBase()));
            assertEquals(s, resumed.state());
            ring.add(4, w(DATA, 8), w(DATA + 64, 8));
            DescriptorChain c = resumed.pop();
            assertEquals(4, c.head());
            assertEquals(2, c.writableCount());
            resumed.pushUsed(4, 3);
            assertTrue(resumed.flushUsed(), "the first decision after a restart notifies");
            Used u = ring.reap();
            assertEquals(new Used(4, 3, DESC_F_WRITE), u, "used bits of lap 2 are 0");
            assertEquals(new QueueState(3, false, 3, false), resumed.state());
        }
    }

    @Test
    void restartRefusesStatesThatDoNotFit() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            PackedDeviceQueue q = ring.device;
            assertRefused(q, new QueueState(5, true, 0, true), "nextAvail", 5);
            assertRefused(q, new QueueState(0, true, 5, true), "nextUsed", 5);
            // six slots outstanding in a ring of five: avail at slot 1 of lap 2, used at slot 0 of lap 1
            assertRefused(q, new QueueState(1, false, 0, true), "nextUsed", 0);
            // used ahead of avail
            assertRefused(q, new QueueState(0, true, 1, true), "nextUsed", 1);
            assertRefused(q, new QueueState(3, false, 4, false), "nextUsed", 4);
            // exactly a ring outstanding fits, and restart clears the earlier violation
            q.restart(new QueueState(0, false, 0, true));
            assertFalse(q.isBroken());
            assertEquals(new QueueState(0, false, 0, true), q.state());
            q.restart(new QueueState(0, true, 3, false)); // from used slot 3 of lap 2 to avail slot 0 of lap 3
            assertEquals(new QueueState(0, true, 3, false), q.state());
            assertFalse(q.isBroken());
        }
    }

    private static void assertRefused(PackedDeviceQueue q, QueueState s, String field, long value) {
        InvalidQueueStateException e = assertThrows(InvalidQueueStateException.class, () -> q.restart(s));
        assertEquals(field, e.field());
        assertEquals(value, e.value());
        assertTrue(q.isBroken());
        assertSame(e, q.violation());
    }

    // ---- used-buffer notifications ----

    @Test
    void enableNotifiesEveryPublication() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            ring.driverEvent.release(0, EVENT_F_ENABLE);
            for (int i = 0; i < 12; i++) {
                ring.roundTrip(i % 5);
            }
            assertEquals(12, ring.calls.signals());
            assertFalse(ring.device.flushUsed(), "nothing published: no decision");
            assertEquals(12, ring.device.counters().notificationsSent);
        }
    }

    /** The outcome a device's counters take: the first decision after a start notifies, then the driver's wish. */
    @Test
    void flushUsedOutcomeTellsNotifiedSuppressedAndNoDecisionApart() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            ring.driverEvent.release(0, EVENT_F_DISABLE);
            int[] expected = {DeviceQueue.FLUSH_NOTIFIED, DeviceQueue.FLUSH_SUPPRESSED, DeviceQueue.FLUSH_SUPPRESSED};
            for (int i = 0; i < expected.length; i++) {
                ring.add(i, PackedHostileRing.w(PackedHostileRing.DATA, 8));
                assertEquals(i, ring.device.pop().head());
                ring.device.pushUsed(i, 0);
                assertEquals(expected[i], ring.device.flushUsedOutcome(), "publication " + i);
                assertEquals(DeviceQueue.FLUSH_NONE, ring.device.flushUsedOutcome(), "nothing new: no decision");
                assertEquals(i, ring.reap().id());
            }
            assertEquals(1, ring.calls.signals());
            assertEquals(2, ring.device.counters().notificationsSuppressed);
        }
    }

    @Test
    void disableNotifiesOnlyTheFirstDecisionAfterARestart() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            ring.driverEvent.release(0, EVENT_F_DISABLE);
            for (int i = 0; i < 6; i++) {
                ring.roundTrip(i % 5);
            }
            assertEquals(1, ring.calls.signals());
            assertEquals(5, ring.device.counters().notificationsSuppressed);
            ring.device.restart(ring.device.state());
            ring.roundTrip(0);
            ring.roundTrip(1);
            assertEquals(2, ring.calls.signals());
        }
    }

    @Test
    void descWithoutEventIdxIsEnable() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options().withEventIdx(false))) {
            ring.roundTrip(0);
            ring.driverEvent.release(3 | EVENT_WRAP_BIT, EVENT_F_DESC); // an event not reached for a while
            for (int i = 1; i < 8; i++) {
                ring.roundTrip(i % 5);
            }
            assertEquals(8, ring.calls.signals());
        }
    }

    /** One single-slot buffer per flush; returns whether that flush notified. */
    private static boolean serveOne(PackedHostileRing ring, int id) {
        ring.add(id, w(DATA, 8));
        ring.device.pushUsed(ring.device.pop().head(), 8);
        boolean notified = ring.device.flushUsed();
        assertEquals(id, ring.reap().id());
        return notified;
    }

    @Test
    void descNotifiesWhenThePublishedSlotsPassTheEvent() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            assertTrue(serveOne(ring, 0), "first decision");
            ring.driverEvent.release(3 | EVENT_WRAP_BIT, EVENT_F_DESC); // slot 3 of lap 1
            assertFalse(serveOne(ring, 1), "slot 1");
            assertFalse(serveOne(ring, 2), "slot 2");
            assertTrue(serveOne(ring, 3), "slot 3: the event");
            assertFalse(serveOne(ring, 4), "slot 4: past it");
            ring.driverEvent.release(1, EVENT_F_DESC); // slot 1 of lap 2 (wrap 0)
            assertFalse(serveOne(ring, 0), "slot 0 of lap 2");
            assertTrue(serveOne(ring, 1), "slot 1 of lap 2");
            // the next event is behind the wrap: slot 0 of lap 3 (wrap 1), reached after slots 2, 3, 4 of lap 2
            ring.driverEvent.release(EVENT_WRAP_BIT, EVENT_F_DESC);
            assertFalse(serveOne(ring, 2));
            assertFalse(serveOne(ring, 3));
            assertFalse(serveOne(ring, 4));
            assertTrue(serveOne(ring, 0), "slot 0 of lap 3");
            assertEquals(4, ring.calls.signals());
        }
    }

    @Test
    void descNotifiesForABatchThatCrossesTheEndOverTheEvent() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            for (int id = 0; id < 3; id++) {
                serveOne(ring, id);
            }
            // the device stands at slot 3 of lap 1; the event is slot 0 of lap 2, published by a batch 3, 4, 0
            ring.driverEvent.release(0, EVENT_F_DESC);
            for (int id = 0; id < 3; id++) {
                ring.add(id, w(DATA, 8));
            }
            for (int id = 0; id < 3; id++) {
                ring.device.pushUsed(ring.device.pop().head(), 0);
            }
            assertTrue(ring.device.flushUsed());
            // and one that stops just short of it does not
            try (PackedHostileRing other = new PackedHostileRing(5, options())) {
                for (int id = 0; id < 3; id++) {
                    serveOne(other, id);
                }
                other.driverEvent.release(0, EVENT_F_DESC);
                for (int id = 0; id < 2; id++) {
                    other.add(id, w(DATA, 8));
                    other.device.pushUsed(other.device.pop().head(), 0);
                }
                assertFalse(other.device.flushUsed());
            }
        }
    }

    // ---- kicks ----

    @Test
    void kickSuppressionWritesWithEventIdx() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options())) {
            ring.device.disableKicks();
            assertEquals(EVENT_F_DISABLE, EventSuppression.mode(ring.deviceEvent.wordAcquire()));
            assertFalse(ring.device.enableKicksOrFindPending());
            int word = ring.deviceEvent.wordAcquire();
            assertEquals(EVENT_F_DESC, EventSuppression.mode(word));
            assertEquals(EVENT_WRAP_BIT, EventSuppression.offWrap(word), "slot 0, wrap 1");
            for (int i = 0; i < 4; i++) {
                ring.roundTrip(i); // two slots each
            }
            ring.device.disableKicks();
            assertEquals(EVENT_F_DISABLE, EventSuppression.mode(ring.deviceEvent.wordAcquire()));
            assertFalse(ring.device.enableKicksOrFindPending());
            word = ring.deviceEvent.wordAcquire();
            assertEquals(EVENT_F_DESC, EventSuppression.mode(word));
            assertEquals(3, EventSuppression.offWrap(word), "slot 3, wrap 0");
            ring.add(0, w(DATA, 8));
            assertTrue(ring.device.enableKicksOrFindPending());
        }
    }

    @Test
    void kickSuppressionWritesWithoutEventIdx() {
        try (PackedHostileRing ring = new PackedHostileRing(5, options().withEventIdx(false))) {
            ring.roundTrip(0);
            ring.roundTrip(1);
            ring.device.disableKicks();
            assertEquals(EVENT_F_DISABLE << 16, ring.deviceEvent.wordAcquire());
            assertFalse(ring.device.enableKicksOrFindPending());
            assertEquals(EVENT_F_ENABLE, ring.deviceEvent.wordAcquire());
            assertEquals(1, ring.device.counters().disableCalls);
            assertEquals(1, ring.device.counters().enableCalls);
        }
    }

    /** The flags the re-check of enable found available are not loaded again by the next pop. */
    @Test
    void cachedFlagsOnEnableSaveOneLoad() {
        long[] reads = new long[2];
        for (int cached = 0; cached < 2; cached++) {
            try (PackedHostileRing ring = new PackedHostileRing(5, options().withCachedAvailOnEnable(cached == 1))) {
                ring.roundTrip(0); // slot 2 next: not the first of a line, so no batched check
                ring.device.disableKicks();
                ring.add(2, r(DATA, 8), w(DATA + 64, 8));
                long before = ring.device.counters().availIdxReads;
                assertTrue(ring.device.enableKicksOrFindPending());
                DescriptorChain c = ring.device.pop();
                assertEquals(2, c.head());
                assertEquals(2, c.count());
                reads[cached] = ring.device.counters().availIdxReads - before;
                assertNull(ring.device.pop());
            }
        }
        assertEquals(2, reads[0]);
        assertEquals(1, reads[1]);
    }

    // ---- batched availability ----

    /**
     * Four single buffers made available at once are popped from one batched check; the same buffers made
     * available one at a time go through the per-slot path. Both give the same chains, the same used ring and
     * the same data; the batch loads the flags once for the four.
     */
    @Test
    void batchedPopsMatchOneAtATime() {
        long[][] results = new long[2][];
        long[] batchReads = new long[2];
        for (int mode = 0; mode < 2; mode++) {
            Random rnd = new Random(99);
            try (PackedHostileRing ring = new PackedHostileRing(8, options())) {
                List<Long> out = new ArrayList<>();
                int id = 0;
                for (int round = 0; round < 10; round++) {
                    for (int k = 0; k < 4; k++) {
                        int shape = k % 2; // single writable, single readable
                        addShaped(ring, id % 8, shape, rnd);
                        if (mode == 1) {
                            popAndComplete(ring, out);
                        }
                        id++;
                    }
                    if (mode == 0) {
                        long before = ring.device.counters().availIdxReads;
                        for (int k = 0; k < 4; k++) {
                            popAndComplete(ring, out);
                        }
                        batchReads[mode] += ring.device.counters().availIdxReads - before;
                    }
                    assertNull(ring.device.pop());
                    ring.device.flushUsed();
                    for (int k = 0; k < 4; k++) {
                        Used u = ring.reap();
                        out.add((long) u.id());
                        out.add((long) u.len());
                        out.add((long) u.flags());
                        out.add(ring.memory.get(U64, DATA + u.id() * PER_ID));
                    }
                    assertNull(ring.reap());
                }
                out.add(ring.device.state().toPackedBase());
                results[mode] = out.stream().mapToLong(Long::longValue).toArray();
            }
        }
        assertArrayEquals(results[1], results[0]);
        assertEquals(10, batchReads[0], "one load per four buffers");
    }

    private static void popAndComplete(PackedHostileRing ring, List<Long> out) {
        DescriptorChain c = ring.device.pop();
        assertNotNull(c);
        out.add((long) c.head());
        long crc = readableCrc(c);
        out.add(crc);
        long written = 0;
        if (c.writableBytes() > 0) {
            MemorySegment tmp = MemorySegment.ofArray(new long[]{crc ^ c.head()});
            written = c.scatter(0, tmp, 0, 8);
        }
        ring.device.pushUsed(c.head(), written);
    }

    @Test
    void batchedCheckFallsBackForAListInTheLine() {
        try (PackedHostileRing ring = new PackedHostileRing(8, options())) {
            ring.add(0, w(DATA, 8));
            ring.add(1, r(DATA + 64, 8), w(DATA + 128, 8)); // slots 1 and 2
            ring.add(2, w(DATA + 192, 8));
            assertEquals(0, ring.device.pop().head());
            assertEquals(2, ring.device.pop().count());
            assertEquals(2, ring.device.pop().head());
            assertNull(ring.device.pop());
            assertEquals(new QueueState(4, true, 0, true), ring.device.state());
        }
    }

    // ---- IN_ORDER ----

    @Test
    void inOrderCoalescesWholeBuffersIntoOneUsedDescriptor() {
        try (PackedHostileRing ring = new PackedHostileRing(7, options().withInOrder(true))) {
            ring.add(4, w(DATA, 16));
            ring.add(0, r(DATA + 64, 8), w(DATA + 128, 16)); // two slots
            ring.add(6, r(DATA + 192, 8)); // nothing writable: whole by definition
            ring.add(2, w(DATA + 256, 16));
            ring.add(3, w(DATA + 320, 16));
            for (int id : new int[]{4, 0, 6, 2, 3}) {
                assertEquals(id, ring.device.pop().head());
            }
            assertThrows(IllegalStateException.class, () -> ring.device.pushUsed(0, 16), "out of pop order");
            ring.device.pushUsed(4, 16);
            ring.device.pushUsed(0, 16);
            ring.device.pushUsed(6, 0);
            ring.device.pushUsed(2, 5); // partial: ends the run with its own length
            ring.device.pushUsed(3, 16);
            assertThrows(IllegalStateException.class, ring.device::state, "pushed, not yet published");
            ring.device.flushUsed();
            assertEquals(new QueueState(6, true, 6, true), ring.device.state());
            int used1 = PackedLayout.usedBits(true);
            assertEquals(new Used(2, 5, used1 | DESC_F_WRITE), ring.reap(), "one entry for 4, 0, 6, 2 at slot 0");
            assertEquals(used1, ring.flagsAt(0) & ~DESC_F_WRITE);
            assertTrue(PackedLayout.isAvailable(ring.flagsAt(1), true), "slot 1 skipped: left as the driver wrote it");
            ring.advanceUsed(1 + 2 + 1 + 1 - ring.slotsOf(2)); // the skipped buffers' slots
            assertEquals(new Used(3, 16, used1 | DESC_F_WRITE), ring.reap(), "the run of 3 at slot 5");
            assertNull(ring.reap());
            assertEquals(1, ring.device.counters().usedIdxWrites);
            assertFalse(ring.device.isBroken());
        }
    }

    /** Many laps of IN_ORDER runs: the driver frees every buffer up to the id it reads, each exactly once. */
    @Test
    void inOrderRunsAcrossWraps() {
        int size = 5;
        Random rnd = new Random(5);
        try (PackedHostileRing ring = new PackedHostileRing(size, options().withInOrder(true))) {
            ArrayDeque<Integer> freeIds = new ArrayDeque<>(List.of(0, 1, 2, 3, 4));
            ArrayDeque<Integer> outstanding = new ArrayDeque<>();
            long[] written = new long[size];
            long returned = 0;
            for (int round = 0; round < 300; round++) {
                while (!freeIds.isEmpty() && ring.freeSlots() >= 2 && rnd.nextInt(4) != 0) {
                    int id = freeIds.poll();
                    addShaped(ring, id, rnd.nextBoolean() ? 0 : 2, rnd);
                    outstanding.add(id);
                }
                DescriptorChain c;
                while ((c = ring.device.pop()) != null) {
                    long n = rnd.nextInt(3) == 0 ? rnd.nextInt((int) c.writableBytes() + 1) : c.writableBytes();
                    written[c.head()] = n;
                    ring.device.pushUsed(c.head(), n);
                }
                ring.device.flushUsed();
                Used u;
                while ((u = ring.reap()) != null) {
                    int skipped = 0;
                    int id;
                    while ((id = outstanding.poll()) != u.id()) {
                        assertEquals(ELEM, written[id], "a skipped buffer was written whole");
                        skipped += ring.slotsOf(id);
                        freeIds.add(id);
                        returned++;
                    }
                    assertEquals(written[id], u.len());
                    freeIds.add(id);
                    returned++;
                    ring.advanceUsed(skipped);
                }
                assertTrue(outstanding.isEmpty(), "every buffer came back");
                assertEquals(new QueueState(ring.availPos(), ring.availWrap(), ring.usedPos(), ring.usedWrap()),
                        ring.device.state());
            }
            assertEquals(ring.device.counters().buffers, returned);
            assertTrue(returned > 4 * size);
        }
    }
}
