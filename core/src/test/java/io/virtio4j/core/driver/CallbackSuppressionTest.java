package io.virtio4j.core.driver;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DeviceQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static io.virtio4j.core.layout.SplitLayout.AVAIL_F_NO_INTERRUPT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Driver-controlled used-buffer notification suppression (virtqueue.md 2.6, 2.8), single-threaded and
 * deterministic: the driver disables and re-enables callbacks, the device's {@code flushUsed()} must follow.
 */
class CallbackSuppressionTest {

    /** The driver adds and kicks one buffer, the device serves it; returns whether the device notified. Not reaped. */
    private static boolean complete(Pair p, Object token) {
        p.add(token, 1, 1);
        p.driver.kick();
        return p.serveOne();
    }

    @Test
    void withEventIdxTheFirstDecisionAfterStartAlwaysNotifies() {
        try (Pair p = Pair.withEventIdx(8, true)) {
            p.driver.disableCallbacks();
            assertEquals(0xFFFF, p.avail.usedEventAcquire(), "used_event is parked as far behind as 16 bits allow");
            assertTrue(complete(p, "a"), "first decision after start");
            assertFalse(complete(p, "b"));
            p.reap("a", "b");

            p.device.restart(p.device.state());
            assertTrue(complete(p, "c"), "first decision after a restart");
            assertFalse(complete(p, "d"));
            p.reap("c", "d");
            assertEquals(2, p.calls.signals());
        }
    }

    @Test
    void withoutEventIdxTheFlagDecidesEvenTheFirstTime() {
        try (Pair p = Pair.withEventIdx(8, false)) {
            p.driver.disableCallbacks();
            assertFalse(complete(p, "a"), "NO_INTERRUPT is authoritative for the first decision too");
            assertFalse(complete(p, "b"));
            p.reap("a", "b");
            assertEquals(0, p.calls.signals());
        }
    }

    @ParameterizedTest(name = "eventIdx={0}")
    @ValueSource(booleans = {true, false})
    void disableCallbacksSuppressesNotificationsUntilEnabled(boolean eventIdx) {
        try (Pair p = Pair.withEventIdx(8, eventIdx)) {
            assertTrue(p.roundTrip("warm-up").notified());

            p.driver.disableCallbacks();
            if (eventIdx) {
                assertEquals(0, p.avail.flagsAcquire(), "with EVENT_IDX the flags stay 0");
                assertEquals(0, p.avail.usedEventAcquire(), "used_event = last_used - 1");
            } else {
                assertEquals(AVAIL_F_NO_INTERRUPT, p.avail.flagsAcquire());
            }
            for (int i = 0; i < 3; i++) {
                assertFalse(complete(p, i), "completion " + i + " while disabled");
                p.reap(i);
            }
            assertEquals(3, p.device.counters().notificationsSuppressed);
            assertEquals(1, p.calls.signals());

            assertFalse(p.driver.enableCallbacksOrFindPending(), "nothing pending: safe to sleep");
            if (eventIdx) {
                assertEquals(4, p.avail.usedEventAcquire(), "used_event = last_used");
            } else {
                assertEquals(0, p.avail.flagsAcquire());
            }
            assertTrue(complete(p, "e"));
            assertEquals(2, p.calls.signals());
            p.reap("e");
        }
    }

    @ParameterizedTest(name = "eventIdx={0}")
    @ValueSource(booleans = {true, false})
    void enableCallbacksOrFindPendingReportsBuffersUsedWhileDisabled(boolean eventIdx) {
        try (Pair p = Pair.withEventIdx(8, eventIdx)) {
            p.roundTrip("warm-up");
            p.driver.disableCallbacks();
            assertFalse(complete(p, "x"));
            assertTrue(p.driver.enableCallbacksOrFindPending(), "a used buffer is pending: reap it before sleeping");
            p.reap("x");
            assertFalse(p.driver.enableCallbacksOrFindPending());
        }
    }

    /**
     * 8 outstanding buffers: used_event = last_used + 8 * 3 / 4, so the device stays quiet while the first 6 are
     * used and notifies when used.idx moves past used_event, i.e. with the 7th (Linux virtqueue_enable_cb_delayed).
     */
    @Test
    void enableCallbacksDelayedOrFindPendingNotifiesAfterThreeQuartersOfTheOutstandingBuffers() {
        try (Pair p = Pair.withEventIdx(8, true)) {
            p.roundTrip("warm-up"); // last_used = 1
            int[] heads = new int[8];
            for (int i = 0; i < 8; i++) {
                p.add(i, 1, 0);
                p.driver.kick();
            }
            for (int i = 0; i < 8; i++) {
                heads[i] = p.device.pop().head();
            }

            assertFalse(p.driver.enableCallbacksDelayedOrFindPending());
            assertEquals(1 + 6, p.avail.usedEventAcquire());
            for (int i = 0; i < 8; i++) {
                p.device.pushUsed(heads[i], 0);
                assertEquals(i + 1 == 7 ? DeviceQueue.FLUSH_NOTIFIED : DeviceQueue.FLUSH_SUPPRESSED,
                        p.device.flushUsedOutcome(), "completion " + (i + 1) + " of 8");
            }
            assertEquals(DeviceQueue.FLUSH_NONE, p.device.flushUsedOutcome(), "nothing new published: no decision");
            assertEquals(2, p.calls.signals());
            p.reap(0, 1, 2, 3, 4, 5, 6, 7);
        }
    }

    @Test
    void enableCallbacksDelayedOrFindPendingReturnsTrueOnceThatManyAreAlreadyUsed() {
        try (Pair p = Pair.withEventIdx(8, true)) {
            p.roundTrip("warm-up");
            p.driver.disableCallbacks();
            int[] heads = new int[8];
            for (int i = 0; i < 8; i++) {
                p.add(i, 1, 0);
                p.driver.kick();
            }
            for (int i = 0; i < 8; i++) {
                heads[i] = p.device.pop().head();
            }
            for (int i = 0; i < 6; i++) {
                p.device.pushUsed(heads[i], 0);
                assertFalse(p.device.flushUsed());
            }
            assertFalse(p.driver.enableCallbacksDelayedOrFindPending(), "6 used, 6 tolerated");
            p.device.pushUsed(heads[6], 0);
            assertTrue(p.device.flushUsed());
            assertTrue(p.driver.enableCallbacksDelayedOrFindPending(), "7 used, 6 tolerated: reap first");
        }
    }

    @Test
    void withoutEventIdxEnableCallbacksDelayedEnablesAtOnce() {
        try (Pair p = Pair.withEventIdx(8, false)) {
            p.roundTrip("warm-up");
            p.driver.disableCallbacks();
            for (int i = 0; i < 8; i++) {
                p.add(i, 1, 0);
                p.driver.kick();
            }
            assertFalse(p.driver.enableCallbacksDelayedOrFindPending());
            assertEquals(0, p.avail.flagsAcquire());
            assertTrue(p.serveOne(), "the flag has no threshold: the first completion notifies");
        }
    }

    @ParameterizedTest(name = "eventIdx={0}")
    @ValueSource(booleans = {true, false})
    void flushUsedAfterPublishUsedStillNotifies(boolean eventIdx) {
        try (Pair p = Pair.withEventIdx(8, eventIdx)) {
            p.roundTrip("warm-up");
            p.add("b", 1, 1);
            p.driver.kick();
            p.popAndPush();
            p.device.publishUsed();
            assertTrue(p.device.flushUsed(), "the driver has callbacks on and was not notified about this buffer");
        }
    }
}
