package io.virtio4j.core.feature;

import io.virtio4j.core.ordering.Ordering;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.driver.DriverOptions;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class VirtioFeaturesTest {

    @Test
    void orderPlatformForcesStrongBarriersOnBothSides() {
        long features = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.ORDER_PLATFORM);
        assertEquals(Ordering.STRONG, DeviceOptions.fromFeatures(features, Ordering.WEAK, true).ordering());
        assertEquals(Ordering.STRONG, DriverOptions.defaults().withOrdering(Ordering.WEAK).forFeatures(features).ordering());
        long plain = VirtioFeatures.bit(VirtioFeatures.VERSION_1);
        assertEquals(Ordering.WEAK, DeviceOptions.fromFeatures(plain, Ordering.WEAK, true).ordering());
        assertEquals(Ordering.STRONG, DeviceOptions.fromFeatures(plain, Ordering.STRONG, true).ordering());
    }

    @Test
    void ringFeaturesFollowNegotiation() {
        long both = VirtioFeatures.bit(VirtioFeatures.EVENT_IDX) | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC);
        DeviceOptions d = DeviceOptions.fromFeatures(both, Ordering.WEAK, false);
        assertTrue(d.eventIdx());
        assertTrue(d.indirectDesc());
        assertFalse(d.cachedAvailOnEnable());
        DeviceOptions none = DeviceOptions.fromFeatures(0, Ordering.WEAK, true);
        assertFalse(none.eventIdx());
        assertFalse(none.indirectDesc());
        try (Arena arena = Arena.ofConfined()) {
            DriverOptions withTables = DriverOptions.defaults().withIndirect(arena.allocate(4096), 0, 4, 2);
            assertNotNull(withTables.forFeatures(both).indirectTables());
            assertNull(withTables.forFeatures(VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)).indirectTables());
            assertFalse(withTables.forFeatures(VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC)).eventIdx());
        }
    }
}
