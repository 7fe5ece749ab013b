package io.virtio4j.core.driver;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.policy.AvailPublication;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The publication contract of a LAZY driver towards a device that polls and is never kicked. */
class LazyPublicationTest {

    private static Pair lazy(AvailPublication publication) {
        return Pair.open(16, DriverOptions.defaults().withPublication(publication), DeviceOptions.defaults());
    }

    @Test
    void publishWithoutKicksFeedsAPollingDevice() {
        try (Pair p = lazy(AvailPublication.LAZY)) {
            for (int round = 0; round < 40; round++) { // 40 rounds of 5 wrap the 16 descriptors many times
                for (int i = 0; i < 5; i++) {
                    p.add(round * 5 + i, 1, 1);
                }
                p.driver.publish();
                for (int i = 0; i < 5; i++) {
                    p.popAndPush();
                }
                assertNull(p.device.pop());
                p.device.publishUsed();
                for (int i = 0; i < 5; i++) {
                    assertEquals(round * 5 + i, p.driver.pollUsed());
                }
            }
            assertEquals(0, p.kicks.signals());
            assertEquals(0, p.driver.counters().kicksSent + p.driver.counters().kicksSuppressed,
                    "no kick decision was ever made");
        }
    }

    @Test
    void withoutPublishOrKickPrepareTheDeviceSeesNothing() {
        try (Pair p = lazy(AvailPublication.LAZY)) {
            for (int i = 0; i < 10; i++) {
                p.add(i, 1, 0);
            }
            assertEquals(0, p.avail.idxAcquire(), "avail.idx in shared memory");
            assertNull(p.device.pop());
            assertFalse(p.device.enableKicksOrFindPending());
            p.driver.kickPrepare();
            assertNotNull(p.device.pop(), "kickPrepare publishes");
        }
    }

    /**
     * enableCallbacksDelayed asks for a notification after 3/4 of the buffers the device can see: buffers added but
     * not yet published cannot be used, and counting them would put used_event out of the device's reach.
     */
    @Test
    void delayedCallbacksCountOnlyPublishedBuffers() {
        try (Pair p = lazy(AvailPublication.LAZY)) {
            for (int i = 0; i < 4; i++) {
                p.add(i, 1, 0);
            }
            p.driver.publish();
            for (int i = 4; i < 12; i++) {
                p.add(i, 1, 0); // not published
            }
            assertFalse(p.driver.enableCallbacksDelayedOrFindPending());
            assertEquals(3, p.avail.usedEventAcquire(), "3/4 of the 4 published buffers");
        }
    }
}
