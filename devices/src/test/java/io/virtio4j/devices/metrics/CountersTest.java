package io.virtio4j.devices.metrics;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One writer adds, another thread reads: the reader never sees a counter go back, and every addition arrives. What
 * this cannot show: a torn value (a plain long is not torn on a 64-bit HotSpot either), nor that the reader sees a store
 * soon; opaque accesses are chosen for what the JLS and the JIT allow, not for what one machine does (see
 * {@link Counters}).
 */
class CountersTest {

    @Test
    void aReaderSeesEachCounterOnlyGrowAndFinallyEverything() throws InterruptedException {
        Counters c = new Counters(3);
        int rounds = 200_000;
        Thread writer = new Thread(() -> {
            for (int i = 1; i <= rounds; i++) {
                c.add(0, 1);
                c.add(1, 1L << 33); // past 32 bits: the sum is exact beyond an int
                c.add(2, i);
            }
        });
        writer.start();
        long[] last = new long[3];
        while (writer.isAlive()) {
            for (int k = 0; k < 3; k++) {
                long v = c.get(k);
                assertTrue(v >= last[k], "counter " + k + " went from " + last[k] + " to " + v);
                last[k] = v;
            }
        }
        writer.join();
        assertEquals(rounds, c.get(0));
        assertEquals((long) rounds << 33, c.get(1));
        assertEquals((long) rounds * (rounds + 1) / 2, c.get(2));
    }

    @Test
    void onlyItsOwnSlotsAreCountersAndSumsNeedTheSameShape() {
        Counters c = new Counters(2);
        assertThrows(IndexOutOfBoundsException.class, () -> c.add(2, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> c.add(-1, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> c.get(2));
        assertThrows(IllegalArgumentException.class, () -> c.addAll(new Counters(3)));
        assertThrows(IllegalArgumentException.class, () -> new Counters(-1));
        c.add(1, 5);
        Counters sum = new Counters(2);
        sum.addAll(c);
        sum.addAll(c);
        assertEquals(0, sum.get(0));
        assertEquals(10, sum.get(1));
    }
}
