package io.virtio4j.core.driver;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link DriverQueue#reofferInFlight()}: a device dies with buffers taken and some returned out of order; a new
 * device resumed from the index it answers gets every buffer not returned exactly once, each with its own
 * descriptors (the readable bytes' checksum travels with the token), and the returned ones stay reapable once.
 */
class ReofferInFlightTest {
    private static final int BYTES = 64;

    /** Adds a buffer of one readable element of random bytes and one writable; records the bytes' checksum. */
    private static void add(Pair p, int slot, String token, SplittableRandom random, Map<String, Long> sums) {
        long addr = p.slot(slot);
        for (int b = 0; b < BYTES; b += 8) {
            p.memory.set(ValueLayout.JAVA_LONG_UNALIGNED, addr + b, random.nextLong());
        }
        sums.put(token, crc(p, addr));
        p.driver.add(p.sg().readable(addr, BYTES).writable(p.slot(slot + 1), BYTES), token);
    }

    private static long crc(Pair p, long addr) {
        CRC32 c = new CRC32();
        c.update(p.memory.asSlice(addr, BYTES).asByteBuffer());
        return c.getValue();
    }

    /**
     * The new device pops every chain offered, checks each against the checksum of the buffer whose head it is,
     * returns them all: they are exactly {@code offered}, once each and in that order; the driver then reaps exactly {@code reaped}
     * (those and the ones the old device returned and the driver had not reaped), once each.
     */
    private static void newDeviceServes(Pair p, int base, Map<Integer, String> headTokens, Map<String, Long> sums,
                                        String[] offered, String... reaped) {
        p.device.restart(QueueState.split(base, base));
        Map<String, Integer> popped = new HashMap<>();
        List<String> order = new ArrayList<>();
        DescriptorChain c;
        while ((c = p.device.pop()) != null) {
            String token = headTokens.get(c.head());
            order.add(token);
            CRC32 crc = new CRC32();
            crc.update(c.readable(0).asByteBuffer());
            assertEquals(sums.get(token), crc.getValue(), "the chain at head " + c.head() + " is " + token + "'s");
            popped.merge(token, 1, Integer::sum);
            p.device.pushUsed(c.head(), 0);
        }
        p.device.flushUsed();
        assertEquals(List.of(offered), order, "offered again, in the order added");
        for (String o : offered) {
            assertEquals(1, popped.get(o), o + " offered once");
        }
        Map<String, Integer> got = new HashMap<>();
        Object t;
        while ((t = p.driver.pollUsed()) != null) {
            got.merge((String) t, 1, Integer::sum);
        }
        for (String r : reaped) {
            assertEquals(1, got.get(r), r + " reaped once");
        }
        assertEquals(reaped.length, got.size(), "reaped: " + got);
        assertEquals(0, p.driver.inFlight());
    }

    /**
     * A, B, C taken; the device returns B only and dies. With B reaped first, D takes B's head while the device
     * is away: resuming at the used index alone would offer D at B's slot and again at its own, and A never. They
     * come again in the order added (A, C, D), not in head order (A, D, C).
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void buffersLeftAfterAnOutOfOrderDeathAreOfferedOnceEach(boolean reapBeforeResume) {
        try (Pair p = Pair.open(8, DriverOptions.defaults(), DeviceOptions.defaults())) {
            SplittableRandom random = new SplittableRandom(reapBeforeResume ? 1 : 2);
            Map<String, Long> sums = new HashMap<>();
            Map<Integer, String> heads = new HashMap<>();
            add(p, 0, "A", random, sums);
            add(p, 2, "B", random, sums);
            add(p, 4, "C", random, sums);
            p.driver.kick();
            for (String t : new String[] {"A", "B", "C"}) {
                heads.put(p.device.pop().head(), t);
            }
            int b = p.avail.entry(1);
            p.device.pushUsed(b, 0);
            p.device.flushUsed();
            // the device dies here: A and C taken, not returned
            if (reapBeforeResume) {
                assertEquals("B", p.driver.pollUsed());
            }
            add(p, 6, "D", random, sums); // queued while no device is there
            heads.put(p.avail.entry(3), "D");
            if (reapBeforeResume) {
                assertEquals(b, p.avail.entry(3), "D took B's head: the case that ran D twice");
            }
            int base = p.driver.reofferInFlight();
            assertEquals(1, base, "resumes at the used index");
            assertEquals(4, p.avail.idxAcquire(), "published");
            if (reapBeforeResume) {
                newDeviceServes(p, base, heads, sums, new String[] {"A", "C", "D"}, "A", "C", "D");
            } else {
                newDeviceServes(p, base, heads, sums, new String[] {"A", "C", "D"}, "B", "A", "C", "D");
            }
        }
    }

    /** IN_ORDER: the device returned the first of three; the other two are offered again in the order added. */
    @Test
    void inOrderBuffersLeftAreOfferedInTheOrderAdded() {
        try (Pair p = Pair.open(8, DriverOptions.defaults().withInOrder(true), DeviceOptions.defaults().withInOrder(true))) {
            SplittableRandom random = new SplittableRandom(3);
            Map<String, Long> sums = new HashMap<>();
            Map<Integer, String> heads = new HashMap<>();
            add(p, 0, "A", random, sums);
            add(p, 2, "B", random, sums);
            add(p, 4, "C", random, sums);
            int[] head = {p.avail.entry(0), p.avail.entry(1), p.avail.entry(2)};
            heads.put(head[0], "A");
            heads.put(head[1], "B");
            heads.put(head[2], "C");
            p.driver.kick();
            p.device.pop();
            p.device.pop();
            p.device.pushUsed(head[0], 0);
            p.device.flushUsed();
            int base = p.driver.reofferInFlight();
            assertEquals(1, base);
            assertEquals(head[1], p.avail.entry(1), "B first");
            assertEquals(head[2], p.avail.entry(2), "then C");
            newDeviceServes(p, base, heads, sums, new String[] {"B", "C"}, "A", "B", "C");
        }
    }

    /** The dead device's used ring names a head that is no buffer in flight: named, and the queue is broken. */
    @Test
    void aUsedEntryOfABufferNotInFlightIsRefused() {
        try (Pair p = Pair.open(8, DriverOptions.defaults(), DeviceOptions.defaults())) {
            SplittableRandom random = new SplittableRandom(4);
            Map<String, Long> sums = new HashMap<>();
            add(p, 0, "A", random, sums);
            add(p, 2, "B", random, sums);
            p.driver.kick();
            int a = p.device.pop().head();
            p.device.pushUsed(a, 0);
            p.device.flushUsed();
            p.used.elem(0, 7, 0); // head 7 holds no buffer
            InvalidUsedIdException e = assertThrows(InvalidUsedIdException.class, p.driver::reofferInFlight);
            assertTrue(e.getMessage().contains("used.ring[0].id"), e.getMessage());
            assertTrue(p.driver.isBroken());
            assertThrows(QueueBrokenException.class, p.driver::reofferInFlight);
        }
    }

    /** Nothing in flight: the ring resumes where it is and nothing is offered. */
    @Test
    void anIdleRingResumesAtItsUsedIndex() {
        try (Pair p = Pair.open(8, DriverOptions.defaults(), DeviceOptions.defaults())) {
            p.roundTrip("x");
            p.roundTrip("y");
            assertEquals(2, p.driver.reofferInFlight());
            p.device.restart(QueueState.split(2, 2));
            assertNull(p.device.pop());
        }
    }

    @Test
    void aPackedRingIsRefused() {
        try (Pair p = Pair.open(RingFormat.PACKED, 8, DriverOptions.defaults(), DeviceOptions.defaults())) {
            assertThrows(UnsupportedOperationException.class, p.driver::reofferInFlight);
        }
    }
}
