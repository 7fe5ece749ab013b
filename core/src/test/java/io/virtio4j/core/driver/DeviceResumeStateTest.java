package io.virtio4j.core.driver;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.layout.PackedLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@link DriverQueue#deviceResumeState()}: where a device that resubmits from its own record (vhost-user's inflight
 * area) resumes after its predecessor died: after every used entry that one published, reaped by the driver or
 * not, without reaping or rewriting anything.
 */
class DeviceResumeStateTest {

    /** Split: the ring's used index, whatever the driver reaped; the unreaped entries stay reapable. */
    @Test
    void splitResumesAtTheUsedIndexTheDeviceLeft() {
        try (Pair p = Pair.open(8, DriverOptions.defaults(), DeviceOptions.defaults())) {
            for (int i = 0; i < 4; i++) {
                p.driver.add(p.sg().readable(p.slot(2 * i), 64).writable(p.slot(2 * i + 1), 64), "b" + i);
            }
            p.driver.kick();
            int[] heads = new int[4];
            for (int i = 0; i < 4; i++) {
                heads[i] = p.device.pop().head();
            }
            p.device.pushUsed(heads[2], 0);
            p.device.pushUsed(heads[0], 0);
            p.device.flushUsed();
            assertEquals("b2", p.driver.pollUsed()); // one reaped, one not; b1 and b3 taken and never returned
            assertEquals(QueueState.split(2, 2), p.driver.deviceResumeState());
            assertEquals("b0", p.driver.pollUsed(), "still reapable");
            assertNull(p.driver.pollUsed());
            assertEquals(2, p.driver.inFlight());
        }
    }

    /**
     * Packed: the driver's used position moved past the used descriptors the device wrote and the driver has not
     * reaped (each spanning its buffer's slots), with the wrap counter flipped where they cross the ring's end.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3})
    void packedResumesAfterTheUsedDescriptorsTheDeviceWrote(int reapedBefore) {
        try (var d = new PackedDeviceByHand(8, DriverOptions.defaults())) {
            // one lap of three-slot buffers first, so that the ones below cross the ring's end
            d.add("warm", 2, 1, 64);
            d.driver.kick();
            d.complete(d.fetch(), 0);
            assertEquals("warm", d.driver.pollUsed());
            List<PackedDeviceByHand.Fetched> taken = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                d.add("b" + i, 1, 1, 64); // two slots each: the four fill the ring, the third crosses its end
            }
            d.driver.kick();
            for (int i = 0; i < 4; i++) {
                taken.add(d.fetch());
            }
            d.complete(taken.get(3), 0); // out of order: b3, b1, b0 returned, b2 left in flight
            d.complete(taken.get(1), 0);
            d.complete(taken.get(0), 0);
            List<Object> reaped = new ArrayList<>();
            for (int i = 0; i < reapedBefore; i++) {
                reaped.add(d.driver.pollUsed());
            }
            QueueState at = d.driver.deviceResumeState();
            assertEquals(new QueueState(d.usedPos, d.usedWrap, d.usedPos, d.usedWrap), at);
            assertEquals(1, d.usedPos, "3 + 3 * 2 used slots: past the ring's end");
            assertFalse(d.usedWrap, "the used wrap counter flipped");
            Object t;
            while ((t = d.driver.pollUsed()) != null) {
                reaped.add(t);
            }
            assertEquals(List.of("b3", "b1", "b0"), reaped, "nothing reaped by it, nothing lost");
            assertEquals(1, d.driver.inFlight());
        }
    }

    @Test
    void packedWithNothingUsedResumesAtTheDriversPosition() {
        try (var d = new PackedDeviceByHand(8, DriverOptions.defaults())) {
            d.add("a", 1, 1, 64);
            d.driver.kick();
            d.fetch();
            assertEquals(new QueueState(0, true, 0, true), d.driver.deviceResumeState());
        }
    }

    /** A used descriptor naming a buffer not in flight: the queue breaks, as a reap would have found. */
    @Test
    void packedRefusesAUsedDescriptorOfNoBufferInFlight() {
        try (var d = new PackedDeviceByHand(8, DriverOptions.defaults())) {
            d.add("a", 1, 0, 64);
            d.driver.kick();
            d.fetch();
            d.writeUsed(0, 5, 0, PackedLayout.usedBits(true));
            InvalidUsedIdException e = assertThrows(InvalidUsedIdException.class, d.driver::deviceResumeState);
            assertEquals("desc[0].id", e.field());
            assertEquals(5, e.value());
            assertThrows(QueueBrokenException.class, d.driver::deviceResumeState);
        }
    }
}
