package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.Pair;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class UnpopTest {

    @Test
    void unpoppedChainsComeBackInOrder() {
        try (Pair p = Pair.open(8)) {
            p.add("a", 1, 0);
            p.add("b", 1, 0);
            p.driver.kick();
            int a = p.device.pop().head();
            int b = p.device.pop().head();
            assertNull(p.device.pop());
            assertThrows(IllegalStateException.class, () -> p.device.unpop(a), "only the chain popped last");
            p.device.unpop(b);
            p.device.unpop(a);
            assertEquals(a, p.device.pop().head());
            assertEquals(b, p.device.pop().head());
            p.device.pushUsed(a, 0);
            p.device.pushUsed(b, 0);
            assertThrows(IllegalStateException.class, () -> p.device.unpop(b), "a pushed chain cannot be given back");
            p.device.flushUsed();
            p.reap("a", "b");
            assertEquals(2, p.device.counters().buffers);
        }
    }

    /**
     * Giving a chain back checks it against what this side popped, not against the avail ring, which the driver
     * may rewrite meanwhile: a rewritten slot must not make the device's own bookkeeping call fail (and take the
     * queue's thread with it); the next pop reads the slot again and validates whatever it finds.
     */
    @Test
    void aSlotTheDriverRewroteAfterThePopDoesNotFailTheGiveBack() {
        try (Pair p = Pair.open(8)) {
            p.add("a", 1, 0);
            p.add("b", 1, 0);
            p.driver.kick();
            int a = p.device.pop().head();
            int slot = 0;
            assertEquals(a, p.avail.entry(slot));
            p.avail.entry(slot, a + 1); // a hostile driver rewrites the entry the device has read
            p.device.unpop(a);
            assertEquals(a + 1, p.device.pop().head(), "the next pop reads the slot again");
        }
    }
}
