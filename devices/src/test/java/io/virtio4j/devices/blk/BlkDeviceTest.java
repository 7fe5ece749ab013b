package io.virtio4j.devices.blk;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.vhost.backend.ConfigWriteRefusedException;
import io.virtio4j.vhost.protocol.ConfigPayload;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a blk device offers and answers on the control path: features, configuration space, SET_CONFIG. */
class BlkDeviceTest {
    private static BlkDevice device(boolean readOnly, int queues, int blockSize) {
        return new BlkDevice(BlockStore.ofNull((1L << 30) + 1000, readOnly, blockSize),
                BlkDevice.Options.of(queues, BlockEngine.SYNC, 32));
    }

    @Test
    void aWritableSingleQueueDeviceOffersDiscardAndNoRoOrMq() {
        long f = device(false, 1, 512).features();
        for (int bit : new int[] {VirtioFeatures.VERSION_1, VirtioFeatures.EVENT_IDX, VirtioFeatures.INDIRECT_DESC,
                VirtioFeatures.RING_PACKED, BlkLayout.F_SIZE_MAX, BlkLayout.F_SEG_MAX, BlkLayout.F_BLK_SIZE,
                BlkLayout.F_TOPOLOGY, BlkLayout.F_FLUSH, BlkLayout.F_CONFIG_WCE, BlkLayout.F_DISCARD,
                BlkLayout.F_WRITE_ZEROES}) {
            assertTrue(VirtioFeatures.has(f, bit), "bit " + bit);
        }
        assertFalse(VirtioFeatures.has(f, BlkLayout.F_RO));
        assertFalse(VirtioFeatures.has(f, BlkLayout.F_MQ));
    }

    @Test
    void aReadOnlyMultiQueueDeviceOffersRoAndMqAndNoDiscard() {
        long f = device(true, 4, 512).features();
        assertTrue(VirtioFeatures.has(f, BlkLayout.F_RO));
        assertTrue(VirtioFeatures.has(f, BlkLayout.F_MQ));
        assertFalse(VirtioFeatures.has(f, BlkLayout.F_DISCARD));
        assertFalse(VirtioFeatures.has(f, BlkLayout.F_WRITE_ZEROES));
    }

    @Test
    void theConfigurationSpaceCountsWholeBlocksInSectors() {
        BlkConfig c = BlkConfig.decode(device(false, 3, 4096).config());
        assertEquals((1L << 30) / 512, c.capacity(), "the tail short of a block is not addressable");
        assertEquals(4096, c.blkSize());
        assertEquals(3, c.numQueues());
        assertEquals(BlkDevice.SEG_MAX, c.segMax());
        assertEquals(1, c.writeback());
        assertEquals(1, c.maxDiscardSeg());
        assertEquals(8, c.discardSectorAlignment());
        assertEquals(BlkDevice.MAX_DISCARD_SECTORS, c.maxWriteZeroesSectors());
        assertEquals(1, c.writeZeroesMayUnmap());
    }

    @Test
    void onlyTheWritebackByteIsWritableAndOnlyWithConfigWce() throws ConfigWriteRefusedException {
        BlkDevice d = device(false, 1, 512);
        assertThrows(ConfigWriteRefusedException.class,
                () -> d.setConfig(BlkConfig.WRITEBACK, new byte[] {0}, ConfigPayload.FLAG_WRITABLE), "no CONFIG_WCE");
        d.featuresNegotiated(d.features());
        d.setConfig(BlkConfig.WRITEBACK, new byte[] {0}, ConfigPayload.FLAG_WRITABLE);
        assertFalse(d.writeback());
        assertEquals(0, BlkConfig.decode(d.config()).writeback());
        d.setConfig(BlkConfig.WRITEBACK, new byte[] {1}, ConfigPayload.FLAG_WRITABLE);
        assertTrue(d.writeback());
        assertThrows(ConfigWriteRefusedException.class,
                () -> d.setConfig(BlkConfig.WRITEBACK, new byte[] {2}, ConfigPayload.FLAG_WRITABLE));
        assertThrows(ConfigWriteRefusedException.class,
                () -> d.setConfig(BlkConfig.WRITEBACK, new byte[] {0, 0}, ConfigPayload.FLAG_WRITABLE));
        assertThrows(ConfigWriteRefusedException.class,
                () -> d.setConfig(BlkConfig.CAPACITY, new byte[] {0}, ConfigPayload.FLAG_WRITABLE));
        assertTrue(d.writeback(), "a refused write changed nothing");
    }

    @Test
    void configWceWithoutFlushStartsInWritethroughAndResetRestoresWriteback() {
        BlkDevice d = device(false, 1, 512);
        d.featuresNegotiated(VirtioFeatures.bit(VirtioFeatures.VERSION_1) | BlkLayout.bit(BlkLayout.F_CONFIG_WCE));
        assertFalse(d.writeback());
        d.reset();
        assertTrue(d.writeback());
    }

    @Test
    void badOptionsNameTheirOption() {
        assertEquals("queues", assertThrows(InvalidBlkOptionException.class,
                () -> BlkDevice.Options.of(0, BlockEngine.SYNC, 1)).option());
        assertEquals("depth", assertThrows(InvalidBlkOptionException.class,
                () -> BlkDevice.Options.of(1, BlockEngine.SYNC, 0)).option());
        assertEquals("blockSize", assertThrows(InvalidBlkOptionException.class,
                () -> BlockStore.ofNull(1 << 20, false, 1024)).option());
        assertEquals("size", assertThrows(InvalidBlkOptionException.class,
                () -> BlockStore.ofNull(100, false, 512)).option());
        assertEquals("io", assertThrows(InvalidBlkOptionException.class, () -> BlockEngine.of("aio")).option());
    }
}
