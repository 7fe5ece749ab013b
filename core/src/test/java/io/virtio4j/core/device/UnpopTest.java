package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.Pair;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    /**
     * Whatever the driver writes into the avail slots after the pops, unpop answers only from what this side
     * popped: a wrong head (in range or not, in flight or not, or the value the driver wrote) is an
     * IllegalStateException, never a ring violation or an index error, and the queue is not broken by it; the
     * right head is given back.
     */
    @Test
    void rewrittenSlotsCannotMakeUnpopFailOtherThanForAWrongHead() {
        try (Pair p = Pair.open(8)) {
            p.add("a", 1, 0);
            p.add("b", 1, 0);
            p.driver.kick();
            int a = p.device.pop().head();
            int b = p.device.pop().head();
            for (int slot = 0; slot < 8; slot++) {
                p.avail.entry(slot, 0xFFFF); // out of range for a queue of 8
            }
            for (int wrong : new int[] {a, 0xFFFF, -1, 8, Integer.MAX_VALUE, Integer.MIN_VALUE, 7}) {
                if (wrong != b) {
                    assertThrows(IllegalStateException.class, () -> p.device.unpop(wrong), "head " + wrong);
                }
            }
            assertFalse(p.device.isBroken());
            p.device.unpop(b);
            for (int slot = 0; slot < 8; slot++) {
                p.avail.entry(slot, a); // now the slots name a head that is in flight
            }
            assertThrows(IllegalStateException.class, () -> p.device.unpop(b), "b was given back already");
            p.device.unpop(a);
            assertFalse(p.device.isBroken());
        }
    }
}
