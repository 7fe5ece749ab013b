package io.virtio4j.devices.blk.io;

import io.virtio4j.os.BlockFile;
import io.virtio4j.os.Errno;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.IoVecs;
import io.virtio4j.os.Memfd;
import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The synchronous engine's contract (depth, results by tag) and its write-zeroes fallback, on a memfd (shmem). */
@ExtendWith(NoFdLeaks.class)
class SyncBlockIoTest {
    private static final int SIZE = 1 << 20;

    private record Done(int tag, long result) {
    }

    /** Fills the file with 0x55 through the engine's own write path. */
    private static void fill(BlockIo io, Arena arena) {
        MemorySegment buf = arena.allocate(SIZE).fill((byte) 0x55);
        IoVecs v = IoVecs.allocate(arena, 1);
        v.set(0, buf, 0, SIZE);
        assertTrue(io.queue(1, BlockIo.WRITE, 0, SIZE, v, 0, 1));
        io.submit();
        List<Done> done = new ArrayList<>();
        io.reap((t, r) -> done.add(new Done(t, r)));
        assertEquals(List.of(new Done(1, SIZE)), done);
    }

    private static byte[] read(BlockIo io, Arena arena) {
        MemorySegment buf = arena.allocate(SIZE);
        IoVecs v = IoVecs.allocate(arena, 1);
        v.set(0, buf, 0, SIZE);
        assertTrue(io.queue(2, BlockIo.READ, 0, SIZE, v, 0, 1));
        io.submit();
        long[] r = new long[1];
        assertEquals(1, io.reap((t, res) -> r[0] = res));
        assertEquals(SIZE, r[0]);
        return buf.toArray(ValueLayout.JAVA_BYTE);
    }

    @Test
    void writeZeroesFallsBackToWritingZerosWhereTheFileSystemHasNoZeroRange() {
        try (FileDescriptor memfd = Memfd.create("blk-zeroes", SIZE);
             BlockFile file = BlockFile.open("/proc/self/fd/" + memfd.fd(), false);
             Arena arena = Arena.ofConfined()) {
            assumeTrue(file.io().fallocate(BlockFile.FALLOC_FL_ZERO_RANGE, 0, 4096) == -Errno.EOPNOTSUPP,
                    "shmem has no ZERO_RANGE here, so the fallback is what runs");
            try (SyncBlockIo io = new SyncBlockIo(file, 4)) {
                fill(io, arena);
                long at = 4096;
                long len = 200 * 1024; // more than one 64 KiB zero chunk
                assertTrue(io.queue(7, BlockIo.WRITE_ZEROES, at, len, null, 0, 0));
                assertTrue(io.queue(8, BlockIo.WRITE_ZEROES_UNMAP, 600 * 1024, 8192, null, 0, 0));
                assertTrue(io.queue(9, BlockIo.DISCARD, 700 * 1024, 8192, null, 0, 0));
                assertTrue(io.queue(10, BlockIo.FLUSH, 0, 0, null, 0, 0));
                io.submit();
                List<Done> done = new ArrayList<>();
                assertEquals(4, io.reap((t, r) -> done.add(new Done(t, r))));
                assertEquals(List.of(new Done(7, len), new Done(8, 8192), new Done(9, 8192), new Done(10, 0)), done);
                byte[] b = read(io, arena);
                for (int i = 0; i < SIZE; i++) {
                    boolean zero = (i >= at && i < at + len) || (i >= 600 * 1024 && i < 608 * 1024)
                            || (i >= 700 * 1024 && i < 708 * 1024);
                    assertEquals(zero ? 0 : 0x55, b[i], "byte " + i);
                }
            }
        }
    }

    @Test
    void depthBoundsWhatIsInFlightUntilReaped() {
        try (FileDescriptor memfd = Memfd.create("blk-depth", SIZE);
             BlockFile file = BlockFile.open("/proc/self/fd/" + memfd.fd(), false);
             SyncBlockIo io = new SyncBlockIo(file, 2)) {
            assertTrue(io.queue(0, BlockIo.FLUSH, 0, 0, null, 0, 0));
            assertTrue(io.queue(1, BlockIo.FLUSH, 0, 0, null, 0, 0));
            assertFalse(io.queue(2, BlockIo.FLUSH, 0, 0, null, 0, 0), "depth 2");
            io.submit();
            assertEquals(2, io.inFlight(), "performed but not reaped: still counted");
            assertFalse(io.queue(2, BlockIo.FLUSH, 0, 0, null, 0, 0));
            assertEquals(2, io.reap((t, r) -> { }));
            assertEquals(0, io.inFlight());
            assertTrue(io.queue(2, BlockIo.FLUSH, 0, 0, null, 0, 0));
        }
    }

    @Test
    void aFailedOperationReportsItsErrno() {
        try (FileDescriptor memfd = Memfd.create("blk-ro", SIZE);
             BlockFile file = BlockFile.open("/proc/self/fd/" + memfd.fd(), true);
             SyncBlockIo io = new SyncBlockIo(file, 2);
             Arena arena = Arena.ofConfined()) {
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, arena.allocate(512), 0, 512);
            assertTrue(io.queue(3, BlockIo.WRITE, 0, 512, v, 0, 1));
            io.submit();
            long[] r = new long[1];
            io.reap((t, res) -> r[0] = res);
            assertEquals(-Errno.EBADF, r[0]);
        }
    }
}
