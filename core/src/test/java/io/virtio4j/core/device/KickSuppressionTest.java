package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.driver.DriverOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static io.virtio4j.core.layout.SplitLayout.USED_F_NO_NOTIFY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Device-controlled kick suppression (virtqueue.md 2.6, 2.11), single-threaded and deterministic: the device
 * disables and re-enables kicks, the driver's {@code kickPrepare()} must follow.
 */
class KickSuppressionTest {

    @ParameterizedTest(name = "eventIdx={0}")
    @ValueSource(booleans = {true, false})
    void disableKicksSuppressesTheNextKick(boolean eventIdx) {
        try (Pair p = Pair.withEventIdx(8, eventIdx)) {
            p.add("a", 1, 0);
            assertTrue(p.driver.kickPrepare(), "nothing is suppressed on a fresh ring");
            p.serveOne();
            p.reap("a");

            int availEvent = p.used.availEventAcquire();
            p.device.disableKicks();
            if (eventIdx) {
                assertEquals(0, p.used.flagsAcquire(), "with EVENT_IDX the flags stay 0");
                assertEquals(availEvent, p.used.availEventAcquire(), "avail_event is simply left behind");
            } else {
                assertEquals(USED_F_NO_NOTIFY, p.used.flagsAcquire());
            }

            p.add("b", 1, 0);
            assertFalse(p.driver.kickPrepare());
            assertEquals(1, p.driver.counters().kicksSuppressed);
            assertNotNull(p.device.pop(), "a polling device still finds the buffer");
        }
    }

    @Test
    void withEventIdxAFreshRingKicksForEntryZeroEvenAfterDisable() {
        // avail_event starts at 0, which asks for a kick when entry 0 is published; disabling does not move it
        try (Pair p = Pair.withEventIdx(8, true)) {
            p.device.disableKicks();
            p.add("a", 1, 0);
            assertTrue(p.driver.kickPrepare());
            p.add("b", 1, 0);
            assertFalse(p.driver.kickPrepare());
        }
    }

    @ParameterizedTest(name = "eventIdx={0}")
    @ValueSource(booleans = {true, false})
    void enableKicksOnAnEmptyRingReturnsFalseAndTheNextAddKicks(boolean eventIdx) {
        try (Pair p = Pair.withEventIdx(8, eventIdx)) {
            p.device.disableKicks();
            for (String token : new String[]{"a", "b", "c"}) {
                p.add(token, 1, 0);
                p.driver.kick();
            }
            for (int i = 0; i < 3; i++) {
                p.popAndPush();
            }
            p.device.flushUsed();
            p.reap("a", "b", "c");

            assertFalse(p.device.enableKicksOrFindPending(), "empty ring: safe to sleep");
            if (eventIdx) {
                assertEquals(3, p.used.availEventAcquire(), "avail_event = last_avail_idx");
            } else {
                assertEquals(0, p.used.flagsAcquire());
            }
            int kicks = p.kicks.signals();
            p.add("d", 1, 0);
            assertTrue(p.driver.kick());
            assertEquals(kicks + 1, p.kicks.signals());
        }
    }

    @ParameterizedTest(name = "eventIdx={0}")
    @ValueSource(booleans = {true, false})
    void enableKicksReturnsTrueWhenABufferWasAddedMeanwhile(boolean eventIdx) {
        try (Pair p = Pair.withEventIdx(8, eventIdx)) {
            p.roundTrip("warm-up");
            p.device.disableKicks();
            p.add("b", 1, 0);
            assertFalse(p.driver.kickPrepare());
            assertTrue(p.device.enableKicksOrFindPending(), "a buffer is available: do not sleep");
            assertNotNull(p.device.pop());
            assertNull(p.device.pop());
        }
    }

    /**
     * With {@code cachedAvailOnEnable}, the avail.idx read by {@code enableKicksOrFindPending()} serves the next pops; without
     * it, the first pop reads avail.idx again. Exact counts of shared-memory loads of avail.idx.
     */
    @ParameterizedTest(name = "cachedAvailOnEnable={0}")
    @ValueSource(booleans = {true, false})
    void cachedAvailIndexSavesTheReadAfterEnableKicks(boolean cached) {
        try (Pair p = Pair.open(8, DriverOptions.defaults(), DeviceOptions.defaults().withCachedAvailOnEnable(cached))) {
            p.roundTrip("warm-up");
            p.device.disableKicks();
            for (String token : new String[]{"a", "b", "c"}) {
                p.add(token, 1, 0);
                p.driver.kickPrepare();
            }

            long reads = p.device.counters().availIdxReads;
            assertTrue(p.device.enableKicksOrFindPending());
            assertEquals(reads + 1, p.device.counters().availIdxReads, "enableKicksOrFindPending reads avail.idx once");

            assertNotNull(p.device.pop());
            assertEquals(reads + (cached ? 1 : 2), p.device.counters().availIdxReads, "first pop");
            assertNotNull(p.device.pop());
            assertNotNull(p.device.pop());
            assertEquals(reads + (cached ? 1 : 2), p.device.counters().availIdxReads, "pops up to a known index");

            assertNull(p.device.pop());
            assertEquals(reads + (cached ? 2 : 3), p.device.counters().availIdxReads, "an empty pop must look again");
        }
    }
}
