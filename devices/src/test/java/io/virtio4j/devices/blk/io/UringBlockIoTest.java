package io.virtio4j.devices.blk.io;

import io.virtio4j.os.BlockFile;
import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.IoVecs;
import io.virtio4j.testkit.NoFdLeaks;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import static io.virtio4j.testkit.Bytes.random;
import static io.virtio4j.testkit.Bytes.crc;
import static io.virtio4j.devices.blk.io.BlockIo.DISCARD;
import static io.virtio4j.devices.blk.io.BlockIo.FLUSH;
import static io.virtio4j.devices.blk.io.BlockIo.READ;
import static io.virtio4j.devices.blk.io.BlockIo.WRITE;
import static io.virtio4j.devices.blk.io.BlockIo.WRITE_ZEROES;
import static io.virtio4j.devices.blk.io.BlockIo.WRITE_ZEROES_UNMAP;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(NoFdLeaks.class)
class UringBlockIoTest {
    private static final int SECTOR = 512;

    @TempDir
    Path dir;

    /** Results by tag; a tag reported twice fails. */
    private static final class Results implements BlockIo.Completion {
        final Map<Integer, Long> byTag = new HashMap<>();

        @Override
        public void completed(int tag, long result) {
            Long before = byTag.put(tag, result);
            if (before != null) {
                throw new AssertionError("tag " + tag + " reported twice: " + before + ", then " + result);
            }
        }
    }

    /** Reaps until nothing is in flight, sleeping on the completion eventfd between looks. */
    private static void awaitAll(UringBlockIo io, BlockIo.Completion sink) {
        while (io.inFlight() > 0) {
            awaitSome(io, sink);
        }
    }

    /** Reaps until at least one operation was reported: drain the eventfd, then reap, as the contract says. */
    private static int awaitSome(UringBlockIo io, BlockIo.Completion sink) {
        while (true) {
            io.completionFd().tryRead();
            int n = io.reap(sink);
            if (n > 0) {
                return n;
            }
            io.completionFd().read();
        }
    }

    private Path file(byte[] contents) throws IOException {
        Path p = Files.createTempFile(dir, "blk", ".img");
        Files.write(p, contents);
        return p;
    }

    private static FileDescriptor open(Path p) {
        return BlockFile.open(p.toString(), false).fileDescriptor();
    }

    /**
     * Requests of 8 sectors each, every one scattered over three pieces of guest memory in a shuffled order, written
     * with more requests than the depth, then read back into other memory the same way: checksums equal, each tag
     * reported once with its whole length.
     */
    @Test
    void scatteredWritesThenReadsCarryTheBytes() throws IOException {
        int requests = 64;
        int bytes = 8 * SECTOR;
        int size = requests * bytes;
        Path p = file(new byte[size]);
        byte[] data = random(size, 21);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 16); Arena arena = Arena.ofConfined()) {
            MemorySegment guest = arena.allocate(size, 4096);
            guest.copyFrom(MemorySegment.ofArray(data));
            IoVecs iov = IoVecs.allocate(arena, 3 * requests);
            fill(iov, guest, requests, bytes);
            run(io, WRITE, iov, requests, bytes);
            assertEquals(crc(data), crc(Files.readAllBytes(p)), "the file holds the guest's bytes");

            MemorySegment back = arena.allocate(size, 4096);
            fill(iov, back, requests, bytes);
            run(io, READ, iov, requests, bytes);
            assertEquals(crc(data), crc(back), "what was read is what was written");
        }
    }

    /** Request {@code r} covers bytes r*bytes.. of {@code memory} as three entries: 100 bytes, the middle, 412 bytes. */
    private static void fill(IoVecs iov, MemorySegment memory, int requests, int bytes) {
        for (int r = 0; r < requests; r++) {
            long base = (long) r * bytes;
            iov.set(3 * r, memory, base, 100);
            iov.set(3 * r + 1, memory, base + 100, bytes - 512);
            iov.set(3 * r + 2, memory, base + bytes - 412, 412);
        }
    }

    private static void run(UringBlockIo io, int op, IoVecs iov, int requests, int bytes) {
        Results results = new Results();
        int next = 0;
        while (next < requests || io.inFlight() > 0) {
            while (next < requests && io.queue(1000 + next, op, (long) next * bytes, bytes, iov, 3 * next, 3)) {
                next++;
            }
            assertTrue(io.inFlight() <= io.depth());
            io.submit();
            awaitSome(io, results);
        }
        assertEquals(requests, results.byTag.size());
        for (int r = 0; r < requests; r++) {
            assertEquals((long) bytes, results.byTag.get(1000 + r), "tag " + (1000 + r));
        }
    }

    @Test
    void aFullEngineQueuesNothing() throws IOException {
        Path p = file(new byte[4096]);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 2)) {
            assertTrue(io.queue(1, FLUSH, 0, 0, null, 0, 0));
            assertTrue(io.queue(2, FLUSH, 0, 0, null, 0, 0));
            assertFalse(io.queue(3, FLUSH, 0, 0, null, 0, 0), "depth 2 reached");
            assertEquals(2, io.inFlight());
            io.submit();
            Results r = new Results();
            awaitAll(io, r);
            assertEquals(Map.of(1, 0L, 2, 0L), r.byTag);
            assertTrue(io.queue(3, FLUSH, 0, 0, null, 0, 0), "room again once reaped");
        }
    }

    @Test
    void flushAfterAWriteSucceeds() throws IOException {
        Path p = file(new byte[4096]);
        byte[] data = random(4096, 4);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 4); Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(4096);
            m.copyFrom(MemorySegment.ofArray(data));
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, m, 0, 4096);
            assertTrue(io.queue(1, WRITE, 0, 4096, v, 0, 1));
            io.submit();
            Results r = new Results();
            awaitAll(io, r);
            assertTrue(io.queue(2, FLUSH, 0, 0, null, 0, 0));
            io.submit();
            awaitAll(io, r);
            assertEquals(Map.of(1, 4096L, 2, 0L), r.byTag);
        }
        assertArrayEquals(data, Files.readAllBytes(p));
    }

    /** Discard, write zeroes and write zeroes with unmap: each reports its length, reads back zeros, keeps the size. */
    @Test
    void discardAndWriteZeroesReadBackZeros() throws IOException {
        int size = 64 * 1024;
        byte[] data = random(size, 9);
        Path p = file(data);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 4); Arena arena = Arena.ofConfined()) {
            assertTrue(io.queue(1, DISCARD, 4096, 4096, null, 0, 0));
            assertTrue(io.queue(2, WRITE_ZEROES, 16384, 8192, null, 0, 0));
            assertTrue(io.queue(3, WRITE_ZEROES_UNMAP, 40960, 4096, null, 0, 0));
            io.submit();
            Results r = new Results();
            awaitAll(io, r);
            assertEquals(Map.of(1, 4096L, 2, 8192L, 3, 4096L), r.byTag);

            // Read back through the engine too.
            MemorySegment m = arena.allocate(size);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, m, 0, size);
            assertTrue(io.queue(4, READ, 0, size, v, 0, 1));
            io.submit();
            awaitAll(io, r);
            assertEquals(size, r.byTag.get(4));
            byte[] expected = data.clone();
            Arrays.fill(expected, 4096, 8192, (byte) 0);
            Arrays.fill(expected, 16384, 24576, (byte) 0);
            Arrays.fill(expected, 40960, 45056, (byte) 0);
            assertArrayEquals(expected, m.toArray(ValueLayout.JAVA_BYTE));
        }
        assertEquals(size, Files.size(p), "the size is kept");
    }

    /**
     * A read that meets the end of the file is short; the engine asks again for the rest, from inside an entry. The
     * file grows before the short completion is reaped, so the rest is there: the read reports its whole length once,
     * and the memory holds both parts.
     */
    @Test
    void aShortReadIsContinuedFromInsideAnEntry() throws IOException {
        byte[] first = random(4096, 1);
        byte[] second = random(4096, 2);
        Path p = file(first);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 2); Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(8192);
            IoVecs v = IoVecs.allocate(arena, 3);
            // The end of the file falls inside the second entry: its rest goes alone, then the third from the
            // caller's array.
            v.set(0, m, 0, 3000);
            v.set(1, m, 3000, 2000);
            v.set(2, m, 5000, 3192);
            assertTrue(io.queue(7, READ, 0, 8192, v, 0, 3));
            io.submit();
            io.completionFd().read(); // the short completion was posted
            Files.write(p, second, StandardOpenOption.APPEND);
            Results r = new Results();
            awaitAll(io, r);
            assertEquals(Map.of(7, 8192L), r.byTag);
            byte[] both = new byte[8192];
            System.arraycopy(first, 0, both, 0, 4096);
            System.arraycopy(second, 0, both, 4096, 4096);
            assertArrayEquals(both, m.toArray(ValueLayout.JAVA_BYTE));
            assertEquals(0, v.base(0) - m.address(), "the caller's iovecs are untouched");
            assertEquals(3000, v.base(1) - m.address());
            assertEquals(2000, v.length(1));
        }
    }

    @Test
    void aReadPastTheEndOfTheFileIsEIO() throws IOException {
        Path p = file(random(4096, 3));
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 2); Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(8192);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, m, 0, 8192);
            assertTrue(io.queue(1, READ, 0, 8192, v, 0, 1));
            io.submit();
            Results r = new Results();
            awaitAll(io, r);
            assertEquals(Map.of(1, (long) -Errno.EIO), r.byTag);
        }
    }

    /**
     * Out of order: a read of an eventfd (standing in for a slow device) stays in flight until the eventfd is
     * written, while a flush queued after it (an eventfd cannot be synced: EINVAL) is reported first.
     */
    @Test
    void completionsAreReportedInTheOrderTheyFinish() {
        try (EventFd slow = EventFd.create(EventFd.EFD_CLOEXEC);
             UringBlockIo io = new UringBlockIo(slow.fileDescriptor(), 4); Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(8);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, m, 0, 8);
            assertTrue(io.queue(1, READ, 0, 8, v, 0, 1));
            assertTrue(io.queue(2, FLUSH, 0, 0, null, 0, 0));
            io.submit();
            Results r = new Results();
            awaitSome(io, r);
            assertEquals(Map.of(2, (long) -Errno.EINVAL), r.byTag, "the later flush first");
            assertEquals(1, io.inFlight());
            slow.write(0x1234_5678L);
            awaitAll(io, r);
            assertEquals(8L, r.byTag.get(1));
            assertEquals(0x1234_5678L, m.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * close() with a read in flight returns only once it finished: the eventfd it reads is written 200 ms later by
     * another thread, and the bytes are in memory when close returns (a close that did not wait would have
     * cancelled the read with the ring, and returned before the write).
     */
    @Test
    void closeWaitsForOperationsInFlight() throws InterruptedException {
        try (EventFd slow = EventFd.create(EventFd.EFD_CLOEXEC); Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(8);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, m, 0, 8);
            UringBlockIo io = new UringBlockIo(slow.fileDescriptor(), 2);
            assertTrue(io.queue(1, READ, 0, 8, v, 0, 1)); // queued, not submitted: close submits it
            Thread writer = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                slow.write(42);
            });
            io.close();
            assertEquals(42, m.get(ValueLayout.JAVA_LONG, 0), "the read finished before close returned");
            assertEquals(0, io.inFlight());
            writer.join();
            assertThrows(IllegalStateException.class, io::submit);
            io.close(); // again: nothing
        }
    }

    /** Hostile or mistaken arguments are refused by name, and nothing is queued. */
    @Test
    void badOperationsAreRefused() throws IOException {
        Path p = file(new byte[4096]);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 2); Arena arena = Arena.ofConfined()) {
            IoVecs v = IoVecs.allocate(arena, 2);
            MemorySegment m = arena.allocate(1024);
            v.set(0, m, 0, 512);
            v.set(1, m, 512, 512);
            assertThrows(IllegalArgumentException.class, () -> io.queue(1, 6, 0, 0, null, 0, 0));
            assertThrows(IllegalArgumentException.class, () -> io.queue(1, -1, 0, 0, null, 0, 0));
            assertThrows(IllegalArgumentException.class, () -> io.queue(1, READ, -512, 512, v, 0, 1));
            assertThrows(IllegalArgumentException.class, () -> io.queue(1, DISCARD, Long.MAX_VALUE, 512, null, 0, 0));
            assertThrows(IllegalArgumentException.class, () -> io.queue(1, READ, 0, 1024, v, 0, 1), "lengths differ");
            assertThrows(IllegalArgumentException.class, () -> io.queue(1, WRITE, 0, 512, null, 0, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> io.queue(1, READ, 0, 1024, v, 1, 2));
            assertEquals(0, io.inFlight());
            assertThrows(IllegalArgumentException.class, () -> new UringBlockIo(fd, 0));
        }
    }

    @Test
    void reapingFromInsideACompletionIsRefused() throws IOException {
        Path p = file(new byte[512]);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 1)) {
            assertTrue(io.queue(1, FLUSH, 0, 0, null, 0, 0));
            io.submit();
            IllegalStateException[] refused = new IllegalStateException[1];
            Results results = new Results();
            awaitAll(io, (tag, result) -> {
                results.completed(tag, result);
                refused[0] = assertThrows(IllegalStateException.class, () -> io.reap(results));
            });
            assertNotNull(refused[0]);
            assertEquals(Map.of(1, 0L), results.byTag);
        }
    }

    @Test
    void theCompletionFdIsAnEventFd() throws IOException {
        Path p = file(new byte[512]);
        try (FileDescriptor fd = open(p); UringBlockIo io = new UringBlockIo(fd, 1)) {
            assertNotNull(io.completionFd());
            assertEquals(0, io.completionFd().tryRead(), "nothing finished yet");
            assertTrue(io.queue(1, FLUSH, 0, 0, null, 0, 0));
            io.submit();
            assertTrue(io.completionFd().read() >= 1, "signalled by the completion");
            Results r = new Results();
            assertEquals(1, io.reap(r));
            assertTrue(fd.isOpen(), "the engine does not own the file");
        }
    }
}
