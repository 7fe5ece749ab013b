package io.virtio4j.core.layout;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.policy.AvailPublication;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.stream.Stream;

import static io.virtio4j.core.RingTestSupport.LONG_LE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** {@code vring_need_event} (virtqueue.md 2.6) and 16-bit index wrap-around through a real driver/device pair. */
class NeedEventTest {

    @ParameterizedTest(name = "old={0} new={1} event={2} -> {3}")
    @CsvSource({
            // the examples of virtqueue.md 2.6
            "10,    13, 10,    true",
            "10,    13, 11,    true",
            "10,    13, 12,    true",
            "10,    13, 13,    false",
            "10,    13, 9,     false",
            "65534, 2,  65534, true",
            "65534, 2,  65535, true",
            "65534, 2,  0,     true",
            "65534, 2,  1,     true",
            "65534, 2,  2,     false",
            "65534, 2,  65533, false",
            // edges: an empty batch never notifies, a batch of one notifies for exactly its entry
            "5,     5,  5,     false",
            "5,     5,  4,     false",
            "0,     1,  0,     true",
            "0,     1,  1,     false",
            "65535, 0,  65535, true",
            "65535, 0,  0,     false",
    })
    void truthTableFromTheSpec(int oldIdx, int newIdx, int event, boolean expected) {
        assertEquals(expected, SplitLayout.needEvent(event, newIdx, oldIdx));
    }

    /** Reference definition: {@code event} lies in {@code [old, new)} modulo 2^16. */
    private static boolean inWindow(int event, int newIdx, int oldIdx) {
        return ((event - oldIdx) & 0xFFFF) < ((newIdx - oldIdx) & 0xFFFF);
    }

    @Test
    void agreesWithTheReferenceOnRandomTriples() {
        Random rnd = new Random(0x5EED_CAFEL);
        for (int n = 0; n < 2_000_000; n++) {
            int oldIdx = rnd.nextInt(65536);
            int newIdx = rnd.nextBoolean() ? rnd.nextInt(65536) : (oldIdx + rnd.nextInt(64)) & 0xFFFF;
            // half the events near the window's edges, where off-by-one errors live
            int event = rnd.nextBoolean() ? rnd.nextInt(65536)
                    : ((rnd.nextBoolean() ? oldIdx : newIdx) + rnd.nextInt(5) - 2) & 0xFFFF;
            if (SplitLayout.needEvent(event, newIdx, oldIdx) != inWindow(event, newIdx, oldIdx)) {
                fail("needEvent(event=" + event + ", new=" + newIdx + ", old=" + oldIdx + ") = "
                        + SplitLayout.needEvent(event, newIdx, oldIdx));
            }
        }
    }

    @Test
    void agreesWithAnEnumeratedWindowForEveryEvent() {
        Random rnd = new Random(42);
        int[][] pairs = new int[206][];
        int[][] edges = {{0, 0}, {0, 1}, {65535, 1}, {0, 65535}, {1, 65535}, {32768, 32768}};
        System.arraycopy(edges, 0, pairs, 0, edges.length);
        for (int i = edges.length; i < pairs.length; i++) {
            pairs[i] = new int[]{rnd.nextInt(65536), rnd.nextInt(65536)};
        }
        for (int[] pair : pairs) {
            int oldIdx = pair[0];
            int span = pair[1];
            int newIdx = (oldIdx + span) & 0xFFFF;
            boolean[] published = new boolean[65536];
            for (int k = 0; k < span; k++) {
                published[(oldIdx + k) & 0xFFFF] = true;
            }
            for (int event = 0; event < 65536; event++) {
                if (SplitLayout.needEvent(event, newIdx, oldIdx) != published[event]) {
                    fail("needEvent(event=" + event + ", new=" + newIdx + ", old=" + oldIdx + ") = "
                            + !published[event]);
                }
            }
        }
    }

    static Stream<Arguments> wrapConfigurations() {
        return Stream.of(
                Arguments.of(true, AvailPublication.EAGER),
                Arguments.of(true, AvailPublication.LAZY),
                Arguments.of(false, AvailPublication.EAGER),
                Arguments.of(false, AvailPublication.LAZY));
    }

    /**
     * 200 000 buffers, one at a time, through a ring of 8: both free-running indices wrap three times. The device
     * re-enables kicks and the driver keeps callbacks on, so every kick and every notification must be needed,
     * including across the wrap (the EVENT_IDX comparisons are modulo 2^16).
     */
    @ParameterizedTest(name = "eventIdx={0} {1}")
    @MethodSource("wrapConfigurations")
    void indicesWrapThroughAFullDriverDeviceCycle(boolean eventIdx, AvailPublication publication) {
        int buffers = 200_000;
        try (Pair p = Pair.open(8, DriverOptions.defaults().withEventIdx(eventIdx).withPublication(publication),
                DeviceOptions.defaults().withEventIdx(eventIdx))) {
            MemorySegment scratch = p.arena.allocate(8, 8);
            for (int i = 0; i < buffers; i++) {
                long in = p.slot(2 * (i % 8));
                long out = p.slot(2 * (i % 8) + 1);
                p.memory.set(LONG_LE, in, i);
                p.memory.set(LONG_LE, out, -1L);

                assertFalse(p.device.enableKicksOrFindPending(), "ring must be empty");
                p.driver.add(p.sg().readable(in, 8).writable(out, 16), i);
                if (!p.driver.kick()) {
                    fail("kick " + i + " was suppressed although the device re-enabled kicks");
                }

                DescriptorChain chain = p.device.pop();
                assertNotNull(chain);
                assertEquals(1, chain.readableCount());
                assertEquals(1, chain.writableCount());
                assertEquals(8, chain.gather(0, scratch, 0, 8));
                long value = scratch.get(LONG_LE, 0);
                assertEquals(i, value);
                scratch.set(LONG_LE, 0, value + 1);
                assertEquals(8, chain.scatter(0, scratch, 0, 8));
                p.device.pushUsed(chain.head(), 8);
                assertNull(p.device.pop());
                if (!p.device.flushUsed()) {
                    fail("notification " + i + " was suppressed although the driver keeps callbacks on");
                }

                assertEquals(i, p.driver.pollUsed());
                assertEquals(8, p.driver.lastUsedLength());
                assertEquals(i + 1L, p.memory.get(LONG_LE, out));
                assertNull(p.driver.pollUsed(), "each token comes back exactly once");
            }
            assertEquals(buffers, p.kicks.signals());
            assertEquals(buffers, p.calls.signals());
            assertEquals(buffers, p.driver.counters().completions);
            assertEquals(buffers, p.device.counters().completions);
            assertEquals(buffers & 0xFFFF, p.device.state().nextAvail());
            assertEquals(buffers & 0xFFFF, p.avail.idxAcquire());
            assertEquals(buffers & 0xFFFF, p.used.idxAcquire());
            assertEquals(8, p.driver.freeDescriptors());
            assertTrue(buffers > 3 * 65536, "indices must wrap several times");
        }
    }
}
