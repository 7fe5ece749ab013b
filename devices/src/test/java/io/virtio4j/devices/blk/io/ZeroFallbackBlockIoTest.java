package io.virtio4j.devices.blk.io;

import io.virtio4j.os.BlockFile;
import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;
import io.virtio4j.os.Poll;
import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * One behaviour whatever the engine and the file system: every engine {@link BlockEngine#open} gives, on the disk file
 * system of the temporary directory and on tmpfs (holes, but no ZERO_RANGE), answers DISCARD and WRITE_ZEROES alike
 * and leaves the same bytes; on tmpfs the raw engines' -EOPNOTSUPP shows that the fallback is what ran.
 */
@ExtendWith(NoFdLeaks.class)
@ParameterizedClass
@CsvSource({"SYNC, tmp", "SYNC, tmpfs", "IO_URING, tmp", "IO_URING, tmpfs"})
class ZeroFallbackBlockIoTest {
    private static final Path TMPFS = Path.of("/dev/shm");
    /** Two zero steps and a tail of small entries: the longest write-zeroes below, then 1 MiB more. */
    private static final long ZEROS = ZeroFallbackBlockIo.ZERO_STEP + 4096 + 512;
    private static final long SIZE = ZEROS + (1 << 20);
    private static final long HANG_NANOS = TimeUnit.SECONDS.toNanos(60);

    @Parameter(0)
    BlockEngine engine;
    @Parameter(1)
    String fileSystem;
    @TempDir
    Path tmp;
    private Path file;
    private BlockStore store;

    @BeforeEach
    void open() throws IOException {
        Path dir = tmp;
        if (fileSystem.equals("tmpfs")) {
            assumeTrue(Files.isDirectory(TMPFS), "no " + TMPFS);
            dir = TMPFS;
        }
        file = Files.createTempFile(dir, "zero-fallback", ".img");
        try (RandomAccessFile r = new RandomAccessFile(file.toFile(), "rw")) {
            r.setLength(SIZE);
        }
        store = BlockStore.open(file.toString(), false, 512);
    }

    @AfterEach
    void close() throws IOException {
        if (store != null) {
            store.close();
        }
        if (file != null) {
            Files.deleteIfExists(file);
        }
    }

    private BlockIo raw(int depth) {
        return switch (engine) {
            case SYNC -> new SyncBlockIo(store.file(), depth);
            case IO_URING -> new UringBlockIo(store.file().fileDescriptor(), depth);
        };
    }

    /** Submits what is queued and reaps until {@code n} operations finished; tag to result. */
    private static Map<Integer, Long> finish(BlockIo io, int n) {
        io.submit();
        Map<Integer, Long> done = new HashMap<>();
        EventFd fd = io.completionFd();
        Poll poll = fd == null ? null : new Poll(fd.fileDescriptor(), Poll.POLLIN);
        long deadline = System.nanoTime() + HANG_NANOS; // a hang guard, not a timing assertion
        while (done.size() < n && System.nanoTime() - deadline < 0) {
            if (fd != null) {
                fd.tryRead(); // before the reap: a completion posted after it signals again
            }
            int r = io.reap((t, res) -> assertNull(done.put(t, res), "operation " + t + " reported twice"));
            if (r == 0 && poll != null) {
                poll.await(TimeUnit.MILLISECONDS.toNanos(100));
            }
        }
        assertEquals(n, done.size(), "operations finished");
        assertEquals(0, io.inFlight());
        return done;
    }

    private static void transfer(BlockIo io, int op, MemorySegment buf, Arena arena) {
        IoVecs v = IoVecs.allocate(arena, 1);
        v.set(0, buf, 0, buf.byteSize());
        assertTrue(io.queue(1, op, 0, buf.byteSize(), v, 0, 1));
        assertEquals(Map.of(1, buf.byteSize()), finish(io, 1));
    }

    @Test
    void discardAndWriteZeroesLeaveZerosInTheirRangesAndEveryOtherByteAsItWas() {
        try (BlockIo io = engine.open(store, 4); Arena arena = Arena.ofConfined()) {
            assertInstanceOf(ZeroFallbackBlockIo.class, io);
            MemorySegment expected = arena.allocate(SIZE, 4096).fill((byte) 0x55);
            transfer(io, BlockIo.WRITE, expected, arena);
            long unmapAt = 4096 + ZEROS + 4096;
            long discardAt = unmapAt + 65536;
            assertTrue(io.queue(7, BlockIo.WRITE_ZEROES, 4096, ZEROS, null, 0, 0));
            assertTrue(io.queue(8, BlockIo.WRITE_ZEROES_UNMAP, unmapAt, 8192, null, 0, 0));
            assertTrue(io.queue(9, BlockIo.DISCARD, discardAt, 8192, null, 0, 0));
            assertTrue(io.queue(10, BlockIo.FLUSH, 0, 0, null, 0, 0));
            assertEquals(Map.of(7, ZEROS, 8, 8192L, 9, 8192L, 10, 0L), finish(io, 4));
            expected.asSlice(4096, ZEROS).fill((byte) 0);
            expected.asSlice(unmapAt, 8192).fill((byte) 0);
            expected.asSlice(discardAt, 8192).fill((byte) 0);
            MemorySegment back = arena.allocate(SIZE, 4096);
            transfer(io, BlockIo.READ, back, arena);
            assertEquals(-1, back.mismatch(expected), "the first byte that differs");
        }
    }

    @Test
    void onTmpfsTheRawEnginesHaveNoZeroRangeAndTheFallbackAnswers() {
        assumeTrue(fileSystem.equals("tmpfs"));
        assumeTrue(store.file().io().fallocate(BlockFile.ZERO_MODE, 0, 4096) == -Errno.EOPNOTSUPP,
                "tmpfs has no ZERO_RANGE on this kernel");
        try (BlockIo io = raw(2)) {
            assertTrue(io.queue(1, BlockIo.WRITE_ZEROES, 0, 4096, null, 0, 0));
            assertEquals(Map.of(1, (long) -Errno.EOPNOTSUPP), finish(io, 1), "what the engine alone answers");
        }
        try (BlockIo io = engine.open(store, 2)) {
            assertTrue(io.queue(1, BlockIo.WRITE_ZEROES, 0, 4096, null, 0, 0));
            assertEquals(Map.of(1, 4096L), finish(io, 1), "what the guest sees");
        }
    }

    /**
     * Where the zeros are written, one reap writes one step of them at most, not the whole range: the synchronous
     * engine writes in the reap, and a GiB in one call would keep the queue thread from its mailbox for seconds.
     * ZEROS is two steps: the reap after the submit (the fallocate refused, the first step written) and the next
     * (the second written) finish nothing; the one after reports it, whole.
     */
    @Test
    void aSynchronousEngineWritesOneStepOfZerosPerReap() {
        assumeTrue(engine == BlockEngine.SYNC, "the asynchronous engine's steps finish when the kernel is done");
        assumeTrue(store.file().io().fallocate(BlockFile.ZERO_MODE, 0, 4096) == -Errno.EOPNOTSUPP,
                "only where the file system has no ZERO_RANGE");
        try (BlockIo io = engine.open(store, 2)) {
            assertTrue(io.queue(1, BlockIo.WRITE_ZEROES, 0, ZEROS, null, 0, 0));
            io.submit();
            Map<Integer, Long> done = new HashMap<>();
            assertEquals(0, io.reap(done::put), "the whole range written in the first reap");
            assertEquals(0, io.reap(done::put), "the second step written in the first reap");
            assertEquals(1, io.inFlight());
            assertEquals(1, io.reap(done::put));
            assertEquals(Map.of(1, ZEROS), done);
            assertEquals(0, io.inFlight());
        }
    }

    @Test
    void aWriteZeroesOfPartBlocksWhereTheFallbackRunsIsInvalid() {
        assumeTrue(store.file().io().fallocate(BlockFile.ZERO_MODE, 0, 4096) == -Errno.EOPNOTSUPP,
                "only where the file system has no ZERO_RANGE");
        try (BlockIo io = engine.open(store, 2)) {
            assertTrue(io.queue(1, BlockIo.WRITE_ZEROES, 0, 700, null, 0, 0));
            assertEquals(Map.of(1, (long) -Errno.EINVAL), finish(io, 1));
        }
    }

    @Test
    void depthBoundsTheOperationsInFlightAndEachComesBackOnce() {
        try (BlockIo io = engine.open(store, 3)) {
            assertEquals(3, io.depth());
            for (int i = 0; i < 3; i++) {
                assertTrue(io.queue(100 + i, BlockIo.WRITE_ZEROES, i * 8192L, 8192, null, 0, 0));
            }
            assertEquals(3, io.inFlight());
            assertEquals(false, io.queue(103, BlockIo.FLUSH, 0, 0, null, 0, 0), "depth 3");
            assertEquals(Map.of(100, 8192L, 101, 8192L, 102, 8192L), finish(io, 3));
            assertTrue(io.queue(103, BlockIo.FLUSH, 0, 0, null, 0, 0));
            assertEquals(Map.of(103, 0L), finish(io, 1));
        }
    }
}
