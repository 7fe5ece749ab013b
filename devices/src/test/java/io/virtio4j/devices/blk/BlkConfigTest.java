package io.virtio4j.devices.blk;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.frontend.FrontendSession;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * GET_CONFIG of a blk device over vhost-user: a driver reads {@link BlkConfig#READ_SIZE} bytes (what
 * qemu-storage-daemon accepts) or the full {@link BlkConfig#SIZE}; our device answers both alike.
 */
class BlkConfigTest {
    @Test
    void theDeviceAnswersA60ByteAndA96ByteGetConfigAlike() throws Exception {
        BlockStore store = BlockStore.ofNull(3L << 20, false, 4096);
        BlkDevice device = new BlkDevice(store, BlkDevice.Options.of(2, BlockEngine.SYNC, 8));
        InProcessBackend.Connected c = InProcessBackend.start(device, "blk-config");
        try (store; device; FrontendSession s = FrontendSession.over(c.frontend())) {
            s.negotiate(VirtioFeatures.bit(VirtioFeatures.VERSION_1), VirtioFeatures.bit(VirtioFeatures.VERSION_1),
                    FrontendSession.PROTOCOL_FEATURES, 0, 2);
            byte[] short60 = s.getConfig(0, BlkConfig.READ_SIZE);
            byte[] full = s.getConfig(0, BlkConfig.SIZE);
            assertEquals(BlkConfig.READ_SIZE, short60.length);
            assertEquals(BlkConfig.SIZE, full.length);
            assertArrayEquals(short60, Arrays.copyOf(full, BlkConfig.READ_SIZE), "the same first 60 bytes");
            assertArrayEquals(device.config(), full, "the device's whole configuration space");
            BlkConfig expected = device.configSpace();
            assertEquals(expected, BlkConfig.decode(short60));
            assertEquals(expected, BlkConfig.decode(full));
            assertEquals(3L << 20 >> 9, BlkConfig.decode(short60).capacity());
            assertEquals(2, BlkConfig.decode(short60).numQueues());
        }
        c.backend().awaitEnd();
    }
}
