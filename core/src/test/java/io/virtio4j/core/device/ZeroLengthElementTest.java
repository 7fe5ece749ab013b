package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.HostileRing;
import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.error.ZeroLengthElementException;
import org.junit.jupiter.api.Test;

import static io.virtio4j.core.RingTestSupport.HostileRing.DATA;
import static io.virtio4j.core.RingTestSupport.HostileRing.TABLES;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Zero-length elements are refused on both sides (SplitDeviceQueue's class comment says why). */
class ZeroLengthElementTest {

    @Test
    void theDeviceRefusesAZeroLengthDescriptorInAChain() {
        try (HostileRing ring = HostileRing.open(8, DeviceOptions.defaults())) {
            ring.desc(0, DATA, 16, DESC_F_NEXT, 1);
            ring.desc(1, DATA + 16, 0, DESC_F_WRITE, 0);
            ring.makeAvailable(0);
            ZeroLengthElementException e = assertThrows(ZeroLengthElementException.class, ring.device::pop);
            assertEquals("desc[1].len", e.field());
            assertEquals(0, e.value());
            assertTrue(ring.device.isBroken());
            assertThrows(QueueBrokenException.class, ring.device::pop);
            assertTrue(ring.canariesIntact());
        }
    }

    @Test
    void theDeviceRefusesAZeroLengthDescriptorInAnIndirectTable() {
        try (HostileRing ring = HostileRing.open(8, DeviceOptions.defaults())) {
            ring.indirect(TABLES, 0, DATA, 0, 0, 0);
            ring.desc(0, TABLES, 16, DESC_F_INDIRECT, 0);
            ring.makeAvailable(0);
            ZeroLengthElementException e = assertThrows(ZeroLengthElementException.class, ring.device::pop);
            assertEquals("indirect[0].len", e.field());
            assertTrue(ring.device.isBroken());
        }
    }

    @Test
    void theDriverDoesNotPostAZeroLengthElement() {
        ScatterGather sg = new ScatterGather(4);
        assertThrows(IllegalArgumentException.class, () -> sg.readable(0x1000, 0));
        assertThrows(IllegalArgumentException.class, () -> sg.writable(0x1000, 0));
        assertEquals(0, sg.count(), "a refused element is not appended");
        try (Pair p = Pair.open(8)) {
            p.driver.add(p.sg().readable(p.slot(0), 1).writable(p.slot(1), 1), "one-byte elements are fine");
            p.driver.kick();
            DescriptorChain chain = p.device.pop();
            assertEquals(1, chain.readableBytes());
            assertEquals(1, chain.writableBytes());
        }
    }
}
