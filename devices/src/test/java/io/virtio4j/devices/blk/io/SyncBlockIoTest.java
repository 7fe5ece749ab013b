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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The synchronous engine's contract (depth, results by tag), on a memfd (shmem). What it answers where the file
 * system lacks an fallocate mode is {@link ZeroFallbackBlockIoTest}'s, the same for every engine.
 */
@ExtendWith(NoFdLeaks.class)
class SyncBlockIoTest {
    private static final int SIZE = 1 << 20;

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
