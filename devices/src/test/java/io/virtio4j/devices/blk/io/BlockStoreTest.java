package io.virtio4j.devices.blk.io;

import io.virtio4j.devices.blk.InvalidBlkOptionException;
import io.virtio4j.os.netlab.Commands;
import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Opening a backing store: the block size offered must suit what backs it. */
@ExtendWith(NoFdLeaks.class)
class BlockStoreTest {
    @TempDir
    Path dir;

    private Path file(long size) throws IOException {
        Path f = dir.resolve("disk.img");
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.setLength(size);
        }
        return f;
    }

    @Test
    void aRegularFileTakesEitherBlockSize() throws IOException {
        Path f = file(1 << 20);
        for (int blockSize : new int[] {512, 4096}) {
            try (BlockStore s = BlockStore.open(f.toString(), false, blockSize)) {
                assertEquals(0, s.file().logicalBlockSize(), "a regular file has no logical block size");
                assertEquals(blockSize, s.blockSize());
            }
        }
    }

    /**
     * A block device of 4 KiB logical blocks served with 512-byte blocks would fail the 512-aligned DISCARD and
     * WRITE_ZEROES the guest was told are valid (fallocate EINVAL): refused at open, naming the block size. A loop
     * device with 4 KiB sectors plays the disk (root and losetup needed; skipped otherwise).
     */
    @Test
    void aBlockSizeSmallerThanTheDevicesLogicalBlockIsRefused() throws IOException {
        Path f = file(1 << 20);
        String loop = null;
        try {
            loop = Commands.run("losetup", "--sector-size", "4096", "-f", "--show", f.toString()).trim();
        } catch (IllegalStateException e) {
            assumeTrue(false, "no loop device here (root and losetup needed): " + e.getMessage());
        }
        String device = loop;
        try {
            InvalidBlkOptionException e = assertThrows(InvalidBlkOptionException.class,
                    () -> BlockStore.open(device, false, 512));
            assertEquals("blockSize", e.option());
            assertTrue(e.getMessage().contains("4096"), e.getMessage());
            try (BlockStore s = BlockStore.open(device, false, 4096)) {
                assertEquals(4096, s.file().logicalBlockSize());
                assertEquals(1 << 20, s.size());
            }
        } finally {
            Commands.quietly("losetup", "-d", device);
        }
    }
}
