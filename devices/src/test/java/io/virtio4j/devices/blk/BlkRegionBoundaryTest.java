package io.virtio4j.devices.blk;

import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.testkit.DiskImages;
import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static io.virtio4j.testkit.Bytes.crc;
import static io.virtio4j.testkit.Bytes.random;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * virtio-blk over guest memory cut into two adjacent regions, each its own mapping (as a vhost-user back-end maps a
 * front-end's table): data, headers and statuses whose descriptors cross the cut reach the device as two elements
 * each, and go to and from the disk intact (checksums), for every engine and both ring formats.
 */
@ExtendWith(NoFdLeaks.class)
@ParameterizedClass
@EnumSource(BlockEngine.class)
class BlkRegionBoundaryTest {
    private static final int FILE_BYTES = 1 << 20;

    @Parameter
    BlockEngine engine;
    @TempDir
    Path dir;
    private BlockStore store;
    private BlkRig rig;

    @AfterEach
    void close() {
        if (rig != null) {
            rig.close();
        }
        if (store != null) {
            store.close();
        }
    }

    private void rig(RingFormat format) throws IOException {
        Path f = DiskImages.sparse(dir.resolve("disk.img"), FILE_BYTES);
        store = BlockStore.open(f.toString(), false, 512);
        rig = new BlkRig(format, store, engine.open(store, 16), BlkRig.WRITEBACK_FEATURES, true);
    }

    private byte[] fileBytes(long offset, int n) throws IOException {
        return Arrays.copyOfRange(Files.readAllBytes(dir.resolve("disk.img")), (int) offset, (int) offset + n);
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void dataAcrossTheBoundaryIsWrittenAndReadBackIntact(RingFormat format) throws IOException {
        rig(format);
        byte[] data = random(64 * 1024, 7);
        // OUT: the data in one readable descriptor, 5000 bytes below the cut and the rest above it
        long h = rig.header(BlkLayout.T_OUT, 16);
        long d = rig.allocAcross(5000, data.length);
        rig.put(d, data);
        long s = rig.alloc(1);
        assertEquals(1, rig.one(new ScatterGather(4).readable(h, 16).readable(d, data.length).writable(s, 1)));
        assertEquals(BlkLayout.S_OK, rig.status(s));
        assertEquals(crc(data), crc(fileBytes(16 * 512, data.length)), "the disk holds what was written");

        long h2 = rig.header(BlkLayout.T_IN, 16);
        long buf = rig.alloc(data.length + 1);
        assertEquals(data.length + 1, rig.one(new ScatterGather(4).readable(h2, 16).writable(buf, data.length + 1)));
        assertEquals(BlkLayout.S_OK, rig.status(buf + data.length));
        assertEquals(crc(data), crc(rig.bytes(buf, data.length)), "the read returns what was written");
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aHeaderAcrossTheBoundaryIsReadWhole(RingFormat format) throws IOException {
        rig(format);
        byte[] data = random(4096, 9);
        long hd = rig.allocAcross(7, 16 + data.length); // header split 7 + 9, then the data, in one descriptor
        rig.put(hd, headerBytes(BlkLayout.T_OUT, 24));
        rig.put(hd + 16, data);
        long s = rig.alloc(1);
        assertEquals(1, rig.one(new ScatterGather(2).readable(hd, 16 + data.length).writable(s, 1)));
        assertEquals(BlkLayout.S_OK, rig.status(s));
        assertEquals(crc(data), crc(fileBytes(24 * 512, data.length)));
        assertEquals(1, rig.stats.writes());
        assertEquals(0, rig.stats.invalid());
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aReadWhoseDataAndStatusCrossTheBoundaryLandsInBothRegions(RingFormat format) throws IOException {
        rig(format);
        byte[] data = random(8192, 11);
        long h = rig.header(BlkLayout.T_OUT, 40);
        long d = rig.alloc(data.length);
        rig.put(d, data);
        long s = rig.alloc(1);
        assertEquals(1, rig.one(new ScatterGather(4).readable(h, 16).readable(d, data.length).writable(s, 1)));

        long h2 = rig.header(BlkLayout.T_IN, 40);
        long buf = rig.allocAcross(3000, data.length + 1); // 3000 data bytes below the cut, the rest and the status above
        assertEquals(data.length + 1, rig.one(new ScatterGather(4).readable(h2, 16).writable(buf, data.length + 1)));
        assertEquals(BlkLayout.S_OK, rig.status(buf + data.length));
        assertEquals(crc(data), crc(rig.bytes(buf, data.length)));
    }

    /**
     * A request with all seg_max data segments, each across a region boundary (a guest whose RAM the front-end's
     * table cuts finely: DIMMs, virtio-mem): every one of the 2 * seg_max pieces gets an iovec, and the request is
     * served, written and read back intact, not refused.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void segMaxSegmentsEachAcrossABoundaryAreServed(RingFormat format) throws IOException {
        Path f = DiskImages.sparse(dir.resolve("disk.img"), FILE_BYTES);
        store = BlockStore.open(f.toString(), false, 512);
        int segments = BlkDevice.SEG_MAX;
        rig = new BlkRig(format, store, engine.open(store, 16), BlkRig.WRITEBACK_FEATURES, 256, 128);
        int piece = 4096;
        byte[] data = random(segments * piece, 13);
        long h = rig.header(BlkLayout.T_OUT, 8);
        long s = rig.alloc(1);
        long h2 = rig.header(BlkLayout.T_IN, 8);
        long s2 = rig.alloc(1);
        long[] at = new long[segments];
        ScatterGather out = new ScatterGather(segments + 2).readable(h, 16);
        for (int i = 0; i < segments; i++) {
            at[i] = rig.boundary(i + 1) - piece / 2; // half below the cut, half above
            rig.put(at[i], Arrays.copyOfRange(data, i * piece, (i + 1) * piece));
            out.readable(at[i], piece);
        }
        assertEquals(1, rig.one(out.writable(s, 1)));
        assertEquals(BlkLayout.S_OK, rig.status(s));
        assertEquals(crc(data), crc(fileBytes(8 * 512, data.length)), "the disk holds what was written");

        ScatterGather in = new ScatterGather(segments + 2).readable(h2, 16);
        for (int i = 0; i < segments; i++) {
            rig.put(at[i], new byte[piece]);
            in.writable(at[i], piece);
        }
        assertEquals(data.length + 1, rig.one(in.writable(s2, 1)));
        assertEquals(BlkLayout.S_OK, rig.status(s2));
        byte[] back = new byte[data.length];
        for (int i = 0; i < segments; i++) {
            System.arraycopy(rig.bytes(at[i], piece), 0, back, i * piece, piece);
        }
        assertEquals(crc(data), crc(back), "the read returns what was written");
    }

    private static byte[] headerBytes(int type, long sector) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(16).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putInt(type).putInt(0).putLong(sector);
        return b.array();
    }
}
