package io.virtio4j.core.driver;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.stats.QueueCounters;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * STRONG takes a full fence at every publication and observation point, WEAK none: counted by the queues
 * themselves (QueueCounters.strongFences), one per index published or observed.
 */
class StrongFenceCountTest {

    private static Pair open(Ordering ordering, AvailPublication publication) {
        return Pair.open(8, DriverOptions.defaults().withOrdering(ordering).withPublication(publication),
                DeviceOptions.defaults().withOrdering(ordering));
    }

    @ParameterizedTest
    @EnumSource(Ordering.class)
    void oneFenceAtEachPublicationAndObservation(Ordering ordering) {
        int f = ordering == Ordering.STRONG ? 1 : 0;
        try (Pair p = open(ordering, AvailPublication.EAGER)) {
            QueueCounters drv = p.driver.counters();
            QueueCounters dev = p.device.counters();
            p.add("a", 1, 1);
            assertEquals(f, drv.strongFences, "add publishes avail.idx");
            p.driver.kick();
            assertEquals(f, drv.strongFences, "kick after an eager add publishes nothing more");
            assertNotNull(p.device.pop());
            assertEquals(f, dev.strongFences, "pop observes avail.idx");
            assertNull(p.device.pop());
            assertEquals(f, dev.strongFences, "an empty pop reads avail.idx with nothing pending: nothing to order");
            p.device.pushUsed(0, 0);
            assertEquals(f, dev.strongFences, "pushing publishes nothing");
            p.device.publishUsed();
            assertEquals(2 * f, dev.strongFences, "publishUsed publishes used.idx");
            p.device.enableKicksOrFindPending();
            assertEquals(2 * f, dev.strongFences, "re-enabling kicks finds nothing pending: no fence");
            p.add("b", 1, 1);
            assertEquals(2 * f, drv.strongFences, "the second add publishes avail.idx");
            p.device.enableKicksOrFindPending();
            assertEquals(3 * f, dev.strongFences, "re-enabling kicks finds the new entry: the fence before reading it");
            assertEquals("a", p.driver.pollUsed());
            assertEquals(3 * f, drv.strongFences, "reaping observes a moved used.idx");
            assertNull(p.driver.pollUsed());
            assertEquals(3 * f, drv.strongFences, "an empty reap reads used.idx with nothing new: no fence");
        }
    }

    /**
     * STRONG fences only where a load found something to order (as Linux's vhost_get_avail_idx and
     * virtqueue_get_buf take their read barrier): a busy-polling peer that finds its ring empty over and over pays
     * no fence per poll, split and packed, device and driver.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void emptyPollsTakeNoFence(RingFormat format) {
        try (Pair p = Pair.open(format, 8, DriverOptions.defaults().withOrdering(Ordering.STRONG),
                DeviceOptions.defaults().withOrdering(Ordering.STRONG))) {
            QueueCounters drv = p.driver.counters();
            QueueCounters dev = p.device.counters();
            for (int i = 0; i < 1000; i++) {
                assertNull(p.device.pop());
                assertNull(p.driver.pollUsed());
            }
            assertEquals(0, dev.strongFences, "device: " + dev);
            assertEquals(0, drv.strongFences, "driver: " + drv);
            assertTrue(dev.availIdxReads >= 1000, "the device did poll: " + dev);
            p.add("a", 1, 0);
            assertNotNull(p.device.pop());
            assertEquals(1, dev.strongFences, "the poll that finds the buffer fences once before reading it");
        }
    }

    @ParameterizedTest
    @EnumSource(Ordering.class)
    void aLazyDriverFencesWhenItPublishes(Ordering ordering) {
        int f = ordering == Ordering.STRONG ? 1 : 0;
        try (Pair p = open(ordering, AvailPublication.LAZY)) {
            p.add("a", 1, 0);
            p.add("b", 1, 0);
            assertEquals(0, p.driver.counters().strongFences, "nothing published yet");
            p.driver.kick();
            assertEquals(f, p.driver.counters().strongFences, "one publication for both buffers");
            p.driver.publish();
            assertEquals(f, p.driver.counters().strongFences, "nothing left to publish");
        }
    }

    /**
     * The packed queues: one fence per publication store, per device flags load (a batched check of four slots is
     * one) and per used descriptor the driver reads, none in WEAK mode; counted across wraps of a ring of 7 with
     * chains and lazy publication.
     */
    @ParameterizedTest
    @EnumSource(Ordering.class)
    void packedQueuesFenceOncePerObservationAndPublication(Ordering ordering) {
        int f = ordering == Ordering.STRONG ? 1 : 0;
        try (Pair p = Pair.open(RingFormat.PACKED, 7,
                DriverOptions.defaults().withOrdering(ordering).withPublication(AvailPublication.LAZY),
                DeviceOptions.defaults().withOrdering(ordering))) {
            int reaped = 0;
            for (int round = 0; round < 20; round++) {
                for (int i = 0; i < 3; i++) {
                    p.add("t" + round + "." + i, 1, i % 2);
                }
                p.driver.kick();
                for (int i = 0; i < 3; i++) {
                    p.popAndPush();
                }
                assertNull(p.device.pop());
                p.device.flushUsed();
                p.device.enableKicksOrFindPending();
                while (p.driver.pollUsed() != null) {
                    reaped++;
                }
            }
            assertEquals(60, reaped);
            QueueCounters drv = p.driver.counters();
            QueueCounters dev = p.device.counters();
            // the driver fences after a flags load only when it found a used descriptor to read (one per buffer here,
            // without IN_ORDER): a load that finds nothing orders nothing
            assertEquals(f * (drv.availIdxWrites + drv.completions), drv.strongFences, "driver: " + drv);
            // the device fences after a flags load only when the slot was available: 20 rounds of 3 buffers, one of
            // them two descriptors long, 80 available slots read one by one (no line of four singles here), plus
            // one per used-flags publication; its empty pops and re-enables each round fence nothing
            assertEquals(f * (80 + dev.usedIdxWrites), dev.strongFences, "device: " + dev);
            assertTrue(ordering == Ordering.WEAK || dev.strongFences > 60 && drv.strongFences > 20,
                    "STRONG fences: driver " + drv.strongFences + ", device " + dev.strongFences);
        }
    }
}
