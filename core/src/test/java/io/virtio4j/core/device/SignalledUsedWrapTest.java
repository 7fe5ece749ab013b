package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.Pair;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The device remembers used.idx at its last notification decision as need_event's "old" index. Publishing
 * 65,536 or more entries without a decision carries used.idx round past that value: the remembered index must
 * then be treated as unknown, or a notification the driver asked for is suppressed.
 */
class SignalledUsedWrapTest {

    @Test
    void aFullCircleOfPublicationsWithoutADecisionStillNotifies() {
        try (Pair p = Pair.withEventIdx(8, true)) {
            p.roundTrip("first"); // a decision at used.idx 1
            int signalled = p.used.idxAcquire();
            p.driver.disableCallbacks();
            for (int i = 0; i < 65536; i++) {
                p.add(i, 1, 0);
                p.driver.publish();
                p.popAndPush();
                p.device.publishUsed(); // published, no decision
                assertEquals(i, p.driver.pollUsed());
            }
            assertEquals(signalled, p.used.idxAcquire(), "used.idx went once round the circle");
            p.add("last", 1, 0);
            p.driver.publish();
            p.popAndPush();
            // The driver asks for a notification at an entry published long after the last decision; with the
            // stale old index (signalled) need_event would only look at [signalled, signalled + 1).
            p.avail.usedEventRelease((signalled + 5) & 0xFFFF);
            assertTrue(p.device.flushUsed(), "the entries since the last decision include the one asked for");
            assertEquals("last", p.driver.pollUsed());
        }
    }

    @Test
    void lessThanACircleKeepsTheRememberedIndex() {
        try (Pair p = Pair.withEventIdx(8, true)) {
            p.roundTrip("first");
            int signalled = p.used.idxAcquire();
            p.driver.disableCallbacks();
            for (int i = 0; i < 100; i++) {
                p.add(i, 1, 0);
                p.driver.publish();
                p.popAndPush();
                p.device.publishUsed();
                assertEquals(i, p.driver.pollUsed());
            }
            p.add("last", 1, 0);
            p.driver.publish();
            p.popAndPush();
            // used_event points behind every entry since the decision: nothing to notify for.
            p.avail.usedEventRelease((signalled - 2) & 0xFFFF);
            assertFalse(p.device.flushUsed());
        }
    }
}
