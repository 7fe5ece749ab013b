package io.virtio4j.core.driver;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.UsedLengthTooLargeException;
import io.virtio4j.core.layout.Descriptors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The driver side against a hostile device (virtqueue.md 2.8): the used ring is forged by hand. Each bad used
 * element or index must raise its specific exception and break the driver queue.
 */
class DriverValidationTest {
    private static final int QSZ = 8;

    private Pair p;

    @BeforeEach
    void open() {
        p = Pair.open(QSZ);
    }

    @AfterEach
    void close() {
        p.close();
    }

    /** Writes used element {@code slot} and publishes used.idx = {@code idx}, as a device would. */
    private void deviceReturns(int slot, int id, int len, int idx) {
        p.used.elem(slot, id, len);
        p.used.idxRelease(idx);
    }

    private <T extends RingViolationException> T assertViolation(Executable call, Class<T> type, String field, long value) {
        long reaped = p.driver.counters().completions;
        int inFlight = p.driver.inFlight();
        T e = assertThrows(type, call);
        assertEquals(field, e.field(), "field");
        assertEquals(value, e.value(), "value");
        assertTrue(p.driver.isBroken());
        assertEquals(1, p.driver.counters().errors);
        assertEquals(reaped, p.driver.counters().completions, "nothing was reaped");
        assertEquals(inFlight, p.driver.inFlight());
        for (Executable later : new Executable[]{
                p.driver::pollUsed, p.driver::hasUsed, p.driver::kickPrepare, p.driver::enableCallbacksOrFindPending,
                p.driver::enableCallbacksDelayedOrFindPending, () -> p.add("late", 1, 0)}) {
            assertSame(e, assertThrows(QueueBrokenException.class, later).violation());
        }
        return e;
    }

    @Test
    void usedIdNotBelowQueueSize() {
        p.add("a", 1, 1);
        deviceReturns(0, QSZ, 0, 1);
        assertViolation(p.driver::pollUsed, InvalidUsedIdException.class, "used.ring[0].id", QSZ);
    }

    @Test
    void usedIdIsReadAsUnsigned32Bits() {
        p.add("a", 1, 1);
        deviceReturns(0, -1, 0, 1);
        assertViolation(p.driver::pollUsed, InvalidUsedIdException.class, "used.ring[0].id", 0xFFFF_FFFFL);
    }

    @Test
    void usedIdOfADescriptorInsideAChain() {
        p.add("a", 1, 2); // descriptors 0 -> 1 -> 2, head 0
        assertEquals(DESC_F_NEXT, Descriptors.flags(p.splitAreas().descTable(), 0, 0) & DESC_F_NEXT);
        assertEquals(1, Descriptors.next(p.splitAreas().descTable(), 0, 0));
        deviceReturns(0, 1, 0, 1);
        assertViolation(p.driver::pollUsed, InvalidUsedIdException.class, "used.ring[0].id", 1);
    }

    @Test
    void usedIdOfAHeadAlreadyReaped() {
        p.add("a", 1, 1); // head 0 (descriptors 0, 1)
        p.add("b", 1, 1); // head 2
        deviceReturns(0, 0, 0, 1);
        assertEquals("a", p.driver.pollUsed());
        deviceReturns(1, 0, 0, 2); // head 0 again, while only "b" is outstanding
        assertViolation(p.driver::pollUsed, InvalidUsedIdException.class, "used.ring[1].id", 0);
    }

    @Test
    void usedLengthLargerThanTheWritableBytes() {
        p.driver.add(p.sg().readable(p.slot(0), 16).writable(p.slot(1), 32), "a");
        deviceReturns(0, 0, 33, 1);
        assertViolation(p.driver::pollUsed, UsedLengthTooLargeException.class, "used.ring[0].len", 33);
    }

    @Test
    void usedLengthIsReadAsUnsigned32Bits() {
        p.driver.add(p.sg().writable(p.slot(1), 32), "a");
        deviceReturns(0, 0, 0x8000_0000, 1);
        assertViolation(p.driver::pollUsed, UsedLengthTooLargeException.class, "used.ring[0].len", 0x8000_0000L);
    }

    @Test
    void anyUsedLengthOnAReadOnlyBufferIsTooLarge() {
        p.add("a", 2, 0);
        deviceReturns(0, 0, 1, 1);
        assertViolation(p.driver::pollUsed, UsedLengthTooLargeException.class, "used.ring[0].len", 1);
    }

    @Test
    void usedLengthEqualToTheWritableBytesIsAccepted() {
        p.driver.add(p.sg().readable(p.slot(0), 16).writable(p.slot(1), 32).writable(p.slot(2), 8), "a");
        deviceReturns(0, 0, 40, 1);
        assertEquals("a", p.driver.pollUsed());
        assertEquals(40, p.driver.lastUsedLength());
        assertFalse(p.driver.isBroken());
    }

    @Test
    void usedIdxJumpingPastTheOutstandingBuffers() {
        p.add("a", 1, 0);
        p.add("b", 1, 0);
        deviceReturns(0, 0, 0, 3);
        assertViolation(p.driver::pollUsed, IndexJumpException.class, "used.idx", 3);
    }

    @Test
    void usedIdxMovingWithNothingOutstanding() {
        p.used.idxRelease(1);
        assertViolation(p.driver::hasUsed, IndexJumpException.class, "used.idx", 1);
    }

    @Test
    void usedIdxJumpIsAlsoCaughtWhenReEnablingCallbacks() {
        p.add("a", 1, 0);
        p.driver.disableCallbacks();
        p.used.idxRelease(0x8000);
        assertViolation(p.driver::enableCallbacksOrFindPending, IndexJumpException.class, "used.idx", 0x8000);
    }

    @Test
    void usedIdxCoveringAllOutstandingBuffersIsAccepted() {
        p.add("a", 1, 0); // head 0
        p.add("b", 1, 0); // head 1
        p.used.elem(0, 1, 0);
        p.used.elem(1, 0, 0);
        p.used.idxRelease(2);
        p.reap("b", "a"); // out of order is fine without IN_ORDER
        assertEquals(QSZ, p.driver.freeDescriptors());
    }

    @Test
    void resetRepairsABrokenQueue() {
        p.add("a", 1, 1);
        deviceReturns(0, QSZ, 0, 1);
        assertThrows(InvalidUsedIdException.class, p.driver::pollUsed);
        assertThrows(IllegalStateException.class, p.driver::reset, "a buffer is still the driver's");
        assertEquals("a", p.driver.detachUnused(), "the buffer in flight comes back to the driver");
        assertNull(p.driver.detachUnused());
        p.driver.reset();
        p.device.restart(QueueState.INITIAL);
        assertFalse(p.driver.isBroken());
        assertEquals(QSZ, p.driver.freeDescriptors());
        assertEquals(0, p.driver.inFlight());
        p.roundTrip("fresh");
        assertNull(p.driver.pollUsed());
    }
}
