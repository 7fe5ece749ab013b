package io.virtio4j.devices.blk.io;

import io.virtio4j.os.BlockFile;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.IoVecs;
import io.virtio4j.testkit.NoFdLeaks;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Queue, submit and reap allocate nothing once compiled: rounds of reads, writes and a flush through the io_uring
 * engine are measured with this thread's allocated bytes until one round allocates none. Rounds repeat until the
 * compiled code is in place, so a slow JIT on a busy machine only makes the test longer.
 */
@ExtendWith(NoFdLeaks.class)
class UringBlockIoAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int DEPTH = 32;
    private static final int BLOCK = 4096;
    private static final int BATCHES_PER_ROUND = 50;
    private static final int MAX_ROUNDS = 2_000;

    @TempDir
    Path dir;

    /** Counts results and failures: one object for every call. */
    private static final class Counter implements BlockIo.Completion {
        long done;
        long failed;

        @Override
        public void completed(int tag, long result) {
            done++;
            if (result < 0) {
                failed++;
            }
        }
    }

    @Test
    void queueSubmitAndReapAllocateNothing() throws IOException {
        Path p = Files.createTempFile(dir, "alloc", ".img");
        Files.write(p, new byte[DEPTH * BLOCK]);
        try (FileDescriptor fd = BlockFile.open(p.toString(), false).fileDescriptor(); UringBlockIo io = new UringBlockIo(fd, DEPTH);
             Arena arena = Arena.ofConfined()) {
            MemorySegment guest = arena.allocate((long) DEPTH * BLOCK, 4096);
            IoVecs iov = IoVecs.allocate(arena, DEPTH);
            for (int i = 0; i < DEPTH; i++) {
                iov.set(i, guest, (long) i * BLOCK, BLOCK);
            }
            Counter counter = new Counter();
            long least = Long.MAX_VALUE;
            long ops = 0;
            for (int round = 0; round < MAX_ROUNDS && least > 0; round++) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                for (int b = 0; b < BATCHES_PER_ROUND; b++) {
                    for (int i = 0; i < DEPTH - 1; i++) {
                        int op = ((b + i) & 1) == 0 ? BlockIo.WRITE : BlockIo.READ;
                        if (!io.queue(i, op, (long) i * BLOCK, BLOCK, iov, i, 1)) {
                            throw new AssertionError("no room for operation " + i);
                        }
                    }
                    if (!io.queue(DEPTH - 1, BlockIo.FLUSH, 0, 0, null, 0, 0)) {
                        throw new AssertionError("no room for the flush");
                    }
                    io.submit();
                    while (io.inFlight() > 0) {
                        if (io.reap(counter) == 0) {
                            Thread.onSpinWait();
                        }
                    }
                    ops += DEPTH;
                }
                least = Math.min(least, THREADS.getCurrentThreadAllocatedBytes() - before);
            }
            assertEquals(0, counter.failed, "failed operations");
            assertEquals(ops, counter.done, "every operation reported once");
            assertEquals(0, least, "bytes allocated in the least allocating round of "
                    + BATCHES_PER_ROUND * DEPTH + " operations");
        }
    }
}
