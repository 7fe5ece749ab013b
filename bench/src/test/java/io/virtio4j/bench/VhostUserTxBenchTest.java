package io.virtio4j.bench;

import io.virtio4j.core.feature.VirtioFeatures;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A vhost-user run goes with the feature bits its options ask for, or fails naming the one it would go without: a row
 * comparing IN_ORDER off and on must not have run both sides alike.
 */
class VhostUserTxBenchTest {
    private static final long OFFERED_BUT_IN_ORDER = VirtioFeatures.bit(VirtioFeatures.VERSION_1)
            | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX) | VirtioFeatures.bit(VirtioFeatures.RING_PACKED);

    /**
     * IN_ORDER off then on against serve net's back-end (sleeping on kicks, so that the test spins one thread, not
     * two): each run reports what the back-end negotiated, every frame counted; on the split ring the driver stores an
     * avail entry for every frame without IN_ORDER, and under it only where the entry changes (never, in order, once
     * the ring has gone round), the mechanism showing that IN_ORDER was in force on the driver's side too.
     */
    @Test
    void aRunAskingForInOrderNegotiatesItAndSaysSo() throws InterruptedException {
        // what a vhost-user run takes (reclaim eager: its sender reaps every round), sleeping on kicks
        BenchConfig notify = VhostUserTxBench.TAKEN.with("notify", "notify");
        try (VhostUserTxBench bench = new VhostUserTxBench(0.05)) {
            for (String inOrder : new String[] {"off", "on"}) {
                RunResult r = bench.run(notify.with("in-order", inOrder));
                Map<String, Object> log = bench.runLog().getLast();
                assertEquals(inOrder, log.get("in_order"), log.toString());
                assertEquals("split", log.get("ring"), log.toString());
                assertEquals(log.get("tx"), log.get("backend_rx"), "every frame sent was received: " + log);
                double entryWrites = (Double) log.get("avail_entry_writes_per_frame");
                if (inOrder.equals("off")) {
                    assertEquals(1.0, entryWrites, log.toString());
                } else {
                    assertTrue(entryWrites < 1.0, log.toString());
                }
                assertTrue(r.buffers() > 0, log.toString());
            }
        }
    }

    @Test
    void aBackEndThatDoesNotOfferInOrderFailsTheRunNamingIt() {
        BenchConfig on = BenchConfig.defaults().with("in-order", "on");
        BenchmarkFailedException e = assertThrows(BenchmarkFailedException.class,
                () -> VhostUserTxBench.requireFeatures(on, OFFERED_BUT_IN_ORDER, false));
        assertEquals("vhost-user run with in-order on: the back-end does not offer VIRTIO_F_IN_ORDER (bit 35; "
                + "features 0x520000000), so the run would go without it", e.getMessage());
        // what a back-end offers beyond what is asked for is no failure
        assertDoesNotThrow(() -> VhostUserTxBench.requireFeatures(BenchConfig.defaults(), OFFERED_BUT_IN_ORDER, false));
    }

    @Test
    void aRunWhoseBackEndNegotiatedOtherwiseThanAskedFailsNamingTheFeature() {
        BenchConfig on = BenchConfig.defaults().with("in-order", "on");
        long split = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX);
        BenchmarkFailedException without = assertThrows(BenchmarkFailedException.class,
                () -> VhostUserTxBench.requireFeatures(on, split, true));
        assertEquals("vhost-user run with in-order on: the back-end did not negotiate VIRTIO_F_IN_ORDER (bit 35; "
                + "features 0x120000000), so the run went without it", without.getMessage());
        long splitInOrder = split | VirtioFeatures.bit(VirtioFeatures.IN_ORDER);
        BenchmarkFailedException with = assertThrows(BenchmarkFailedException.class,
                () -> VhostUserTxBench.requireFeatures(BenchConfig.defaults(), splitInOrder, true));
        assertEquals("vhost-user run with in-order off: the back-end negotiated VIRTIO_F_IN_ORDER (bit 35; "
                + "features 0x920000000), so the run went with it", with.getMessage());
        BenchmarkFailedException packed = assertThrows(BenchmarkFailedException.class,
                () -> VhostUserTxBench.requireFeatures(on.with("ring", "packed"), splitInOrder, true));
        assertTrue(packed.getMessage().startsWith("vhost-user run with ring packed: the back-end did not negotiate "
                + "VIRTIO_F_RING_PACKED (bit 34;"), packed.getMessage());
        assertDoesNotThrow(() -> VhostUserTxBench.requireFeatures(on, splitInOrder, true));
    }
}
