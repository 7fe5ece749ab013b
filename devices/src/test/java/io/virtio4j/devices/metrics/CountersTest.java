package io.virtio4j.devices.metrics;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One writer adds, another thread reads: never a torn or a smaller value, and every addition arrives. */
class CountersTest {

    @Test
    void aReaderSeesEachCounterOnlyGrowAndFinallyEverything() throws InterruptedException {
        Counters c = new Counters(3);
        int rounds = 200_000;
        Thread writer = new Thread(() -> {
            for (int i = 1; i <= rounds; i++) {
                c.add(0, 1);
                c.add(1, 1L << 33); // a value whose two halves both change: a torn read would show
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
            assertEquals(0, c.get(1) % (1L << 33), "counter 1 torn");
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
