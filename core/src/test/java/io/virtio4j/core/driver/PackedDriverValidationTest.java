package io.virtio4j.core.driver;

import io.virtio4j.core.driver.PackedDeviceByHand.Fetched;
import io.virtio4j.core.error.IndexJumpException;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.ReservedEventModeException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.UsedLengthTooLargeException;
import io.virtio4j.core.policy.AvailPublication;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import static io.virtio4j.core.layout.PackedLayout.DESC_F_AVAIL;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_USED;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The packed driver against a hostile device (virtqueue.md 3.2-3.7): used descriptors and the device event
 * suppression structure are forged by hand. Each violation raises its own exception naming the field and the
 * value, breaks the queue, and every later call reports the same violation.
 */
class PackedDriverValidationTest {
    private static final int QSZ = 8;
    /** The AVAIL/USED bits of a used descriptor in the first lap. */
    private static final int USED = DESC_F_AVAIL | DESC_F_USED;

    private PackedDeviceByHand d;

    private PackedDeviceByHand open(DriverOptions options) {
        d = new PackedDeviceByHand(QSZ, options);
        return d;
    }

    @AfterEach
    void close() {
        d.close();
    }

    private <T extends RingViolationException> T assertViolation(Executable call, Class<T> type, String field, long value) {
        long reaped = d.driver.counters().completions;
        int inFlight = d.driver.inFlight();
        int free = d.driver.freeDescriptors();
        T e = assertThrows(type, call);
        assertEquals(field, e.field(), "field");
        assertEquals(value, e.value(), "value");
        assertTrue(d.driver.isBroken());
        assertEquals(1, d.driver.counters().errors);
        assertEquals(reaped, d.driver.counters().completions, "nothing was reaped");
        assertEquals(inFlight, d.driver.inFlight());
        assertEquals(free, d.driver.freeDescriptors());
        for (Executable later : new Executable[]{
                d.driver::pollUsed, d.driver::hasUsed, d.driver::kickPrepare, d.driver::publish,
                d.driver::enableCallbacksOrFindPending, d.driver::enableCallbacksDelayedOrFindPending,
                () -> d.add("late", 0, 1, 8)}) {
            assertSame(e, assertThrows(QueueBrokenException.class, later).violation());
        }
        return e;
    }

    /** After a violation the owner takes its buffers back and resets; the queue then works again. */
    private void recoverAfterReset(int expectedBack) {
        int back = 0;
        while (d.driver.detachUnused() != null) {
            back++;
        }
        assertEquals(expectedBack, back);
        d.driver.reset();
        d.availPos = d.usedPos = 0;
        d.availWrap = d.usedWrap = true;
        d.add("again", 0, 1, 8);
        d.driver.publish();
        d.complete(d.fetch(), 8);
        assertEquals("again", d.driver.pollUsed());
    }

    @Test
    void usedIdNotBelowQueueSize() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 8);
        d.fetch();
        d.writeUsed(0, QSZ, 0, USED);
        assertViolation(d.driver::pollUsed, InvalidUsedIdException.class, "desc[0].id", QSZ);
        recoverAfterReset(1);
    }

    @Test
    void usedIdIsReadAsUnsigned16Bits() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 8);
        d.fetch();
        d.writeUsed(0, 0xFFFF, 0, USED);
        assertViolation(d.driver::pollUsed, InvalidUsedIdException.class, "desc[0].id", 0xFFFF);
    }

    @Test
    void usedIdNotInFlight() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 8);
        d.fetch();
        d.writeUsed(0, 1, 0, USED);
        assertViolation(d.driver::pollUsed, InvalidUsedIdException.class, "desc[0].id", 1);
    }

    @Test
    void usedIdReturnedTwice() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 8);
        d.add("b", 0, 1, 8);
        Fetched a = d.fetch();
        d.fetch();
        d.complete(a, 0);
        d.complete(a, 0);
        assertEquals("a", d.driver.pollUsed());
        assertViolation(d.driver::pollUsed, InvalidUsedIdException.class, "desc[1].id", 0);
    }

    @Test
    void usedIdOfABufferNotYetPublished() {
        open(DriverOptions.defaults().withPublication(AvailPublication.LAZY));
        d.add("a", 0, 1, 8);
        d.driver.publish();
        d.add("b", 0, 1, 8);
        d.fetch();
        d.writeUsed(0, 1, 0, USED);
        assertViolation(d.driver::pollUsed, InvalidUsedIdException.class, "desc[0].id", 1);
        recoverAfterReset(2);
    }

    @Test
    void usedLengthLargerThanTheWritableBytes() {
        open(DriverOptions.defaults());
        d.add("a", 1, 2, 50);
        d.complete(d.fetch(), 101);
        assertViolation(d.driver::pollUsed, UsedLengthTooLargeException.class, "desc[0].len", 101);
    }

    @Test
    void usedLengthIsReadAsUnsigned32Bits() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 50);
        d.fetch();
        d.writeUsed(0, 0, -1, USED | DESC_F_WRITE);
        assertViolation(d.driver::pollUsed, UsedLengthTooLargeException.class, "desc[0].len", 0xFFFF_FFFFL);
    }

    @Test
    void usedDescriptorWhereNothingIsOutstanding() {
        open(DriverOptions.defaults());
        d.writeUsed(0, 0, 0, USED);
        assertViolation(d.driver::hasUsed, IndexJumpException.class, "desc[0].flags", USED);
    }

    @Test
    void usedDescriptorPastThePublishedBuffers() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 8);
        d.complete(d.fetch(), 0);
        d.writeUsed(1, 0, 0, USED);
        assertEquals("a", d.driver.pollUsed());
        assertViolation(d.driver::pollUsed, IndexJumpException.class, "desc[1].flags", USED);
    }

    @Test
    void usedDescriptorAtTheHeldBackHead() {
        open(DriverOptions.defaults().withPublication(AvailPublication.LAZY));
        d.add("a", 0, 1, 8);
        d.writeUsed(0, 0, 0, USED);
        assertViolation(d.driver::enableCallbacksOrFindPending, IndexJumpException.class, "desc[0].flags", USED);
        recoverAfterReset(1);
    }

    @Test
    void reservedDeviceEventMode() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 8);
        d.deviceEvent(0, 3);
        assertViolation(d.driver::kickPrepare, ReservedEventModeException.class, "deviceEvent.flags", 3);
        assertEquals(0, d.kicks.signals());
    }

    @Test
    void inOrderUsedIdThatIsNotABuffersFirstSlot() {
        open(DriverOptions.defaults().withInOrder(true));
        d.add("a", 1, 1, 8);
        d.fetch();
        d.writeUsed(0, 1, 0, USED);
        assertViolation(d.driver::pollUsed, InvalidUsedIdException.class, "desc[0].id", 1);
    }

    @Test
    void inOrderBatchReachingBeyondThePublishedBuffers() {
        open(DriverOptions.defaults().withInOrder(true).withPublication(AvailPublication.LAZY));
        d.add("a", 0, 1, 8);
        d.add("b", 0, 1, 8);
        d.driver.publish();
        d.add("c", 0, 1, 8);
        d.fetch();
        d.fetch();
        d.writeUsed(0, 2, 0, USED);
        assertViolation(d.driver::pollUsed, InvalidUsedIdException.class, "desc[0].id", 2);
        recoverAfterReset(3);
    }

    @Test
    void inOrderUsedIdBehindTheDevicePosition() {
        open(DriverOptions.defaults().withInOrder(true));
        for (String t : new String[]{"a", "b", "c"}) {
            d.add(t, 0, 1, 8);
            d.fetch();
        }
        d.completeAs(1, 2, 0);
        d.writeUsed(2, 0, 0, USED);
        // The delayed re-check walks past the batch (a, b) to slot 2, whose used id names a, already behind.
        assertViolation(d.driver::enableCallbacksDelayedOrFindPending, InvalidUsedIdException.class, "desc[2].id", 0);
    }

    @Test
    void aBrokenQueueStillHandsBackItsBuffers() {
        open(DriverOptions.defaults());
        d.add("a", 0, 1, 8);
        d.add("b", 0, 1, 8);
        d.fetch();
        d.writeUsed(0, 5, 0, USED);
        assertThrows(InvalidUsedIdException.class, d.driver::pollUsed);
        assertEquals("a", d.driver.detachUnused());
        assertEquals("b", d.driver.detachUnused());
        assertNull(d.driver.detachUnused());
        d.driver.reset();
        assertFalse(d.driver.isBroken());
    }
}
