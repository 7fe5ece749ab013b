package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(NoFdLeaks.class)
class BlockFileTest {
    @TempDir
    Path dir;

    private Path file(int size) throws IOException {
        Path f = dir.resolve("f.img");
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.setLength(size);
        }
        return f;
    }

    @Test
    void aMissingFileIsRefusedWithItsErrno() {
        LinuxException e = assertThrows(LinuxException.class, () -> BlockFile.open(dir.resolve("none").toString(), false));
        assertEquals(Errno.ENOENT, e.errno());
        assertTrue(e.getMessage().contains("none"), e.getMessage());
    }

    @Test
    void vectoredWritesAndReadsMoveEveryPieceAtTheirOffset() throws IOException {
        Path f = file(1 << 16);
        byte[] data = new byte[12_288];
        new Random(1).nextBytes(data);
        try (BlockFile bf = BlockFile.open(f.toString(), false); Arena arena = Arena.ofConfined()) {
            assertEquals(1 << 16, bf.size());
            MemorySegment src = arena.allocateFrom(ValueLayout.JAVA_BYTE, data);
            IoVecs v = IoVecs.allocate(arena, 4);
            v.set(1, src, 0, 100);
            v.set(2, src, 100, 5000);
            v.set(3, src, 5100, data.length - 5100);
            BlockFile.Io io = bf.io();
            assertEquals(data.length, io.pwritev(v, 1, 3, 4096, data.length));
            byte[] onDisk = Arrays.copyOfRange(Files.readAllBytes(f), 4096, 4096 + data.length);
            assertArrayEquals(data, onDisk);

            MemorySegment dst = arena.allocate(data.length);
            v.set(0, dst, 0, 7);
            v.set(1, dst, 7, data.length - 7);
            assertEquals(data.length, io.preadv(v, 0, 2, 4096, data.length));
            assertArrayEquals(data, dst.toArray(ValueLayout.JAVA_BYTE));
            assertEquals(0, io.fdatasync());
        }
    }

    @Test
    void aReadPastTheEndIsAnIoErrorNotAShortSuccess() throws IOException {
        Path f = file(4096);
        try (BlockFile bf = BlockFile.open(f.toString(), true); Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(8192);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, dst, 0, 8192);
            assertEquals(-Errno.EIO, bf.io().preadv(v, 0, 1, 0, 8192));
        }
    }

    @Test
    void aReadOnlyFileRefusesWritesWithoutTouchingTheFile() throws IOException {
        Path f = file(4096);
        try (BlockFile bf = BlockFile.open(f.toString(), true); Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(512).fill((byte) 1);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, src, 0, 512);
            assertEquals(-Errno.EBADF, bf.io().pwritev(v, 0, 1, 0, 512));
            assertEquals(-Errno.EBADF, bf.io().fallocate(BlockFile.FALLOC_FL_ZERO_RANGE, 0, 512));
        }
        assertArrayEquals(new byte[4096], Files.readAllBytes(f));
    }

    @Test
    void punchingAHoleAndZeroingARangeReadBackAsZeros() throws IOException {
        Path f = file(1 << 16);
        byte[] ones = new byte[1 << 16];
        Arrays.fill(ones, (byte) 0x55);
        Files.write(f, ones);
        try (BlockFile bf = BlockFile.open(f.toString(), false)) {
            long r = bf.io().fallocate(BlockFile.FALLOC_FL_PUNCH_HOLE | BlockFile.FALLOC_FL_KEEP_SIZE, 4096, 8192);
            long z = bf.io().fallocate(BlockFile.FALLOC_FL_ZERO_RANGE, 20480, 4096);
            byte[] now = Files.readAllBytes(f);
            assertEquals(1 << 16, now.length, "KEEP_SIZE");
            if (r == 0) {
                assertArrayEquals(new byte[8192], Arrays.copyOfRange(now, 4096, 12288));
            } else {
                assertEquals(-Errno.EOPNOTSUPP, r, "the only acceptable failure");
            }
            if (z == 0) {
                assertArrayEquals(new byte[4096], Arrays.copyOfRange(now, 20480, 24576));
            } else {
                assertEquals(-Errno.EOPNOTSUPP, z, "the only acceptable failure");
            }
            assertEquals(0x55, now[12288]);
            assertEquals(0x55, now[4095]);
        }
    }

    @Test
    void lengthsShortOfTheTotalAreTheCallersBug() throws IOException {
        Path f = file(4096);
        try (BlockFile bf = BlockFile.open(f.toString(), false); Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(512);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, src, 0, 512);
            assertEquals(-Errno.EINVAL, bf.io().pwritev(v, 0, 1, 0, 1024));
            assertThrows(IndexOutOfBoundsException.class, () -> bf.io().pwritev(v, 0, 2, 0, 512));
        }
    }
}
