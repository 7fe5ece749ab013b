package io.virtio4j.os;

import io.virtio4j.os.netlab.Commands;
import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
    void aRegularFileHasNoLogicalBlockSize() throws IOException {
        try (BlockFile bf = BlockFile.open(file(4096).toString(), true)) {
            assertEquals(0, bf.logicalBlockSize(), "ENOTTY: not a block device");
        }
    }

    /**
     * A failed fdatasync is reported with its errno (the call the kernel answers once, captured; a FIFO has no
     * data to sync and answers EINVAL every time).
     */
    @Test
    void aFailedFdatasyncReportsItsErrno() {
        Path fifo = dir.resolve("fifo");
        Commands.run("mkfifo", fifo.toString());
        try (BlockFile bf = BlockFile.open(fifo.toString(), false)) { // O_RDWR opens a FIFO without waiting
            assertEquals(-Errno.EINVAL, bf.io().fdatasync());
        }
    }

    /**
     * A write-back error is reported by the fdatasync that meets it, and the kernel tells it to that one call only
     * (the next answers 0): so it must be the call whose errno is read, never a second one made to learn it. The
     * failing disk is a loop device over a sparse 1 MiB file on a 64 KiB tmpfs: the write lands in the page cache,
     * its write-back runs out of room. Needs root (mount, losetup); skipped otherwise.
     */
    @Test
    void aWriteBackErrorIsReportedByTheFdatasyncThatMeetsIt() throws IOException {
        Path small = Files.createDirectory(dir.resolve("small"));
        try {
            Commands.run("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small.toString());
        } catch (IllegalStateException e) {
            assumeTrue(false, "cannot mount a tmpfs here: " + e.getMessage());
        }
        String loop = null;
        try {
            Path back = small.resolve("back.img");
            try (RandomAccessFile r = new RandomAccessFile(back.toFile(), "rw")) {
                r.setLength(1 << 20);
            }
            try {
                loop = Commands.run("losetup", "-f", "--show", back.toString()).trim();
            } catch (IllegalStateException e) {
                assumeTrue(false, "no loop device here: " + e.getMessage());
            }
            try (BlockFile bf = BlockFile.open(loop, false); Arena arena = Arena.ofConfined()) {
                MemorySegment data = arena.allocate(1 << 20).fill((byte) 0x5A);
                IoVecs v = IoVecs.allocate(arena, 1);
                v.set(0, data, 0, data.byteSize());
                BlockFile.Io io = bf.io();
                assertEquals(1 << 20, io.pwritev(v, 0, 1, 0, 1 << 20), "written into the page cache");
                long r = io.fdatasync();
                assertTrue(r < 0, "the write-back failed, yet fdatasync answered " + r);
            }
        } finally {
            if (loop != null) {
                Commands.quietly("losetup", "-d", loop);
            }
            Commands.quietly("umount", small.toString());
        }
    }

    /**
     * A read the kernel splits (a seq_file such as /proc/kallsyms hands out one buffer of whole records per call) goes
     * on from where each part stopped, inside an entry as often as not, and brings what a plain read brings; the
     * caller's entries are read, never rewritten.
     */
    @Test
    void aReadTheKernelSplitsGoesOnFromInsideAnEntryAndLeavesTheIovecsAsTheyWere() throws IOException {
        Path kallsyms = Path.of("/proc/kallsyms");
        int total = 200_000;
        byte[] expected;
        try (var in = Files.newInputStream(kallsyms)) {
            expected = in.readNBytes(total);
        }
        assumeTrue(expected.length == total, "/proc/kallsyms holds fewer than " + total + " bytes here");
        try (FileChannel ch = FileChannel.open(kallsyms)) {
            assumeTrue(ch.read(ByteBuffer.allocate(total), 0) < total, "the kernel does not split this read");
        }
        int[] lengths = {1000, 3001, 17, 50_000, 4096, 77_777, total - 1000 - 3001 - 17 - 50_000 - 4096 - 77_777};
        try (BlockFile bf = BlockFile.open(kallsyms.toString(), true); Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(total);
            IoVecs v = IoVecs.allocate(arena, lengths.length + 1);
            v.set(0, dst, 0, 0); // an empty entry first (legal: the kernel passes over it)
            long at = 0;
            for (int i = 0; i < lengths.length; i++) {
                v.set(i + 1, dst, at, lengths[i]);
                at += lengths[i];
            }
            byte[] before = v.segment().toArray(ValueLayout.JAVA_BYTE);
            assertEquals(total, bf.io().preadv(v, 0, lengths.length + 1, 0, total));
            assertArrayEquals(expected, dst.toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(before, v.segment().toArray(ValueLayout.JAVA_BYTE), "the iovecs as the caller set them");
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
            MemorySegment src = arena.allocate(512).fill((byte) 0x55);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, src, 0, 512);
            assertEquals(-Errno.EINVAL, bf.io().pwritev(v, 0, 1, 0, 1024));
            assertArrayEquals(new byte[4096], Files.readAllBytes(f), "nothing was written");
            assertThrows(IndexOutOfBoundsException.class, () -> bf.io().pwritev(v, 0, 2, 0, 512));
        }
    }
}
