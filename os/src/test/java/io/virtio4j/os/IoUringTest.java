package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import static io.virtio4j.testkit.Bytes.random;
import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(NoFdLeaks.class)
class IoUringTest {
    @TempDir
    Path dir;

    /** A completion as reaped. */
    private record Cqe(long userData, int result) {
    }

    private static final MethodHandle GETTID = Native.downcall("gettid", ValueLayout.JAVA_INT);
    private static final MethodHandle TGKILL = Native.downcall("tgkill", ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
    /** io_uring_enter's number, the same on x86-64 and aarch64 (a syscall added after the tables were unified). */
    private static final String SYS_IO_URING_ENTER = "426 ";
    /** The JVM handles SIGPIPE and ignores it: a signal that interrupts a wait and harms nothing. */
    private static final int SIGPIPE = 13;

    /**
     * A wait for completions that a signal interrupts (EINTR: a profiler's SIGPROF, a signal at shutdown) is made
     * again, not thrown: the waiting thread is signalled three times while it sits in io_uring_enter, then the
     * read it waits for completes, and the wait returns as if nothing had happened.
     */
    @Test
    void aWaitInterruptedBySignalsIsMadeAgain() throws Throwable {
        try (IoUring ring = IoUring.create(2); EventFd efd = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
             Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(8);
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, buf, 0, 8);
            assertTrue(ring.prepareReadv(efd.fileDescriptor().fd(), 0, v, 0, 1, 7)); // waits for a write to efd
            assertEquals(1, ring.submit());
            AtomicInteger tid = new AtomicInteger();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    tid.set((int) GETTID.invokeExact());
                    ring.awaitCompletions(1);
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "uring-eintr-waiter");
            waiter.start();
            int pid = (int) ProcessHandle.current().pid();
            for (int i = 0; i < 3; i++) {
                awaitInIoUringEnter(waiter, tid);
                assertEquals(0, (int) TGKILL.invokeExact(pid, tid.get(), SIGPIPE));
                Thread.sleep(20); // let the signal land before looking for the wait again (not an assertion)
            }
            awaitInIoUringEnter(waiter, tid);
            efd.write(5);
            waiter.join(TimeUnit.SECONDS.toMillis(60));
            assertFalse(waiter.isAlive(), "the wait did not end once its read completed");
            assertNull(failure.get(), "the interrupted wait failed");
            assertEquals(List.of(new Cqe(7, 8)), reapAll(ring));
            assertEquals(5, buf.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /** Waits until {@code t} sits in io_uring_enter, as /proc tells. */
    private static void awaitInIoUringEnter(Thread t, AtomicInteger tid) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); // a hang guard
        while (true) {
            assertTrue(t.isAlive(), "the waiter ended early");
            if (tid.get() != 0) {
                String sc = Files.readString(Path.of("/proc/self/task/" + tid.get() + "/syscall"));
                if (sc.startsWith(SYS_IO_URING_ENTER)) {
                    return;
                }
            }
            assertTrue(System.nanoTime() - deadline < 0, "the waiter never sat in io_uring_enter");
            Thread.sleep(1);
        }
    }

    private static List<Cqe> reapAll(IoUring ring) {
        List<Cqe> out = new ArrayList<>();
        ring.reap((userData, result, flags) -> out.add(new Cqe(userData, result)));
        return out;
    }

    /** Submits what is prepared, waits for {@code n} completions and reaps them. */
    private static List<Cqe> submitAndReap(IoUring ring, int n) {
        assertTrue(ring.submitAndWait(n) >= 0);
        List<Cqe> out = reapAll(ring);
        assertEquals(n, out.size(), "completions reaped");
        return out;
    }

    private Path file(byte[] contents) throws IOException {
        Path p = Files.createTempFile(dir, "uring", ".img");
        Files.write(p, contents);
        return p;
    }

    @Test
    void nopRoundTrip() {
        try (IoUring ring = IoUring.create(4)) {
            assertEquals(4, ring.sqEntries());
            assertEquals(8, ring.cqEntries());
            assertTrue(ring.prepareNop(0xfeed_0000_0000_0042L));
            assertEquals(1, ring.sqPending());
            assertEquals(List.of(new Cqe(0xfeed_0000_0000_0042L, 0)), submitAndReap(ring, 1));
            assertEquals(0, ring.sqPending());
            assertEquals(0, ring.cqReady());
            assertEquals(0, reapAll(ring).size(), "nothing left to reap");
        }
    }

    @Test
    void entriesAreRoundedUpToAPowerOfTwoAndBounded() {
        try (IoUring ring = IoUring.create(5)) {
            assertEquals(8, ring.sqEntries());
        }
        assertThrows(IllegalArgumentException.class, () -> IoUring.create(0));
        assertThrows(IllegalArgumentException.class, () -> IoUring.create(IoUring.MAX_ENTRIES + 1));
    }

    @Test
    void writevThenReadvCarriesTheBytesBothWays() throws IOException {
        int size = 256 * 1024;
        Path p = file(new byte[size]);
        byte[] data = random(size, 11);
        try (FileDescriptor fd = BlockFile.open(p.toString(), false).fileDescriptor();
             IoUring ring = IoUring.create(8); Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(size, 4096);
            out.copyFrom(MemorySegment.ofArray(data));
            // Written as three uneven pieces of one buffer, read back as two pieces into another.
            IoVecs w = IoVecs.allocate(arena, 3);
            w.set(0, out, 0, 1000);
            w.set(1, out, 1000, 100_000);
            w.set(2, out, 101_000, size - 101_000);
            assertTrue(ring.prepareWritev(fd.fd(), 0, w, 0, 3, 1));
            assertEquals(List.of(new Cqe(1, size)), submitAndReap(ring, 1));
            assertEquals(crc(data), crc(Files.readAllBytes(p)), "the file holds what was written");

            MemorySegment in = arena.allocate(size, 4096);
            IoVecs r = IoVecs.allocate(arena, 4);
            r.set(2, in, 0, 4097);
            r.set(3, in, 4097, size - 4097);
            assertTrue(ring.prepareReadv(fd.fd(), 0, r, 2, 2, 2));
            assertEquals(List.of(new Cqe(2, size)), submitAndReap(ring, 1));
            assertEquals(crc(data), crc(in), "what was read is the file");
        }
    }

    @Test
    void aFailedRequestCompletesWithItsErrno() {
        try (IoUring ring = IoUring.create(4); Arena arena = Arena.ofConfined()) {
            IoVecs v = IoVecs.allocate(arena, 1);
            v.set(0, arena.allocate(4096), 0, 4096);
            assertTrue(ring.prepareReadv(-1, 0, v, 0, 1, 7)); // no such descriptor
            assertEquals(List.of(new Cqe(7, -Errno.EBADF)), submitAndReap(ring, 1));
        }
    }

    @Test
    void fdatasyncAndFsyncComplete() throws IOException {
        Path p = file(random(8192, 3));
        try (FileDescriptor fd = BlockFile.open(p.toString(), false).fileDescriptor(); IoUring ring = IoUring.create(4)) {
            assertTrue(ring.prepareFsync(fd.fd(), IoUring.FSYNC_DATASYNC, 1));
            assertTrue(ring.prepareFsync(fd.fd(), 0, 2));
            List<Cqe> done = submitAndReap(ring, 2);
            done.sort((a, b) -> Long.compare(a.userData(), b.userData()));
            assertEquals(List.of(new Cqe(1, 0), new Cqe(2, 0)), done);
            assertThrows(IllegalArgumentException.class, () -> ring.prepareFsync(fd.fd(), 2, 3));
        }
    }

    @Test
    void punchingAHoleReadsBackZerosAndKeepsTheSize() throws IOException {
        byte[] data = random(16384, 5);
        Path p = file(data);
        try (FileDescriptor fd = BlockFile.open(p.toString(), false).fileDescriptor(); IoUring ring = IoUring.create(4)) {
            assertTrue(ring.prepareFallocate(fd.fd(), BlockFile.FALLOC_FL_PUNCH_HOLE | BlockFile.FALLOC_FL_KEEP_SIZE,
                    4096, 8192, 9));
            assertEquals(List.of(new Cqe(9, 0)), submitAndReap(ring, 1));
        }
        byte[] after = Files.readAllBytes(p);
        assertEquals(data.length, after.length, "KEEP_SIZE keeps the size");
        byte[] expected = data.clone();
        Arrays.fill(expected, 4096, 12288, (byte) 0);
        assertArrayEquals(expected, after, "the hole reads as zeros, the rest is intact");
    }

    @Test
    void zeroRangeReadsBackZeros() throws IOException {
        byte[] data = random(16384, 6);
        Path p = file(data);
        try (FileDescriptor fd = BlockFile.open(p.toString(), false).fileDescriptor(); IoUring ring = IoUring.create(4)) {
            assertTrue(ring.prepareFallocate(fd.fd(), BlockFile.FALLOC_FL_ZERO_RANGE | BlockFile.FALLOC_FL_KEEP_SIZE,
                    1024, 2048, 9));
            assertEquals(List.of(new Cqe(9, 0)), submitAndReap(ring, 1));
        }
        byte[] expected = data.clone();
        Arrays.fill(expected, 1024, 3072, (byte) 0);
        assertArrayEquals(expected, Files.readAllBytes(p));
    }

    @Test
    void aFullSubmissionQueuePreparesNothingUntilSubmitted() {
        try (IoUring ring = IoUring.create(4)) {
            for (int i = 0; i < 4; i++) {
                assertTrue(ring.prepareNop(i));
            }
            assertEquals(0, ring.sqSpace());
            assertFalse(ring.prepareNop(99), "a fifth entry does not fit");
            assertEquals(4, ring.submit());
            assertEquals(4, ring.sqSpace(), "the kernel consumed the entries: their slots are free");
            assertTrue(ring.prepareNop(4));
            List<Cqe> done = submitAndReap(ring, 5);
            BitSet seen = new BitSet();
            done.forEach(c -> seen.set((int) c.userData()));
            assertEquals(5, seen.cardinality(), "each of 0..4 once, 99 never: " + done);
            assertFalse(seen.get(99));
        }
    }

    /** Many writes in flight at once, more than the ring holds in all: each completes once, the file is exact. */
    @Test
    void manyWritesInFlightEachCompleteOnce() throws IOException {
        int blocks = 1000;
        int block = 512;
        Path p = file(new byte[blocks * block]);
        byte[] data = random(blocks * block, 8);
        try (FileDescriptor fd = BlockFile.open(p.toString(), false).fileDescriptor();
             IoUring ring = IoUring.create(32); Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(data.length);
            src.copyFrom(MemorySegment.ofArray(data));
            IoVecs v = IoVecs.allocate(arena, blocks);
            for (int i = 0; i < blocks; i++) {
                v.set(i, src, (long) i * block, block);
            }
            int[] completions = new int[blocks];
            int[] next = {0};
            int[] done = {0};
            while (done[0] < blocks) {
                while (next[0] < blocks && ring.prepareWritev(fd.fd(), (long) next[0] * block, v, next[0], 1, next[0])) {
                    next[0]++;
                }
                assertTrue(ring.submitAndWait(1) >= 0);
                ring.reap((userData, result, flags) -> {
                    assertEquals(block, result, "write " + userData);
                    completions[(int) userData]++;
                    done[0]++;
                });
            }
            int[] once = new int[blocks];
            Arrays.fill(once, 1);
            assertArrayEquals(once, completions);
        }
        assertEquals(crc(data), crc(Files.readAllBytes(p)));
    }

    /** More completions than the CQ holds, none reaped meanwhile: the kernel keeps the rest aside; reap gets all. */
    @Test
    void completionsBeyondTheCompletionQueueAreNotLost() {
        try (IoUring ring = IoUring.create(4)) {
            int total = 4 * ring.cqEntries() / 2 + 4; // 20 with 8 CQ entries
            int prepared = 0;
            while (prepared < total) {
                while (prepared < total && ring.prepareNop(prepared)) {
                    prepared++;
                }
                int r = ring.submit();
                assertTrue(r > 0 || r == -Errno.EBUSY, "submit: " + r);
            }
            assertEquals(ring.cqEntries(), ring.cqReady(), "the ring is full");
            assertTrue(ring.cqOverflowed(), "the rest waits in the kernel");
            BitSet seen = new BitSet();
            int[] count = {0};
            ring.reap((userData, result, flags) -> {
                seen.set((int) userData);
                count[0]++;
            });
            assertEquals(total, count[0]);
            assertEquals(total, seen.cardinality());
            assertFalse(ring.cqOverflowed());
        }
    }

    @Test
    void aRegisteredEventFdIsSignalledOnCompletion() {
        try (IoUring ring = IoUring.create(4); EventFd e = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
            ring.registerEventFd(e);
            assertEquals(0, e.tryRead(), "no completion yet");
            assertTrue(ring.prepareNop(5));
            assertEquals(1, ring.submit());
            assertTrue(e.read() >= 1, "read() waits until the completion signals it");
            assertEquals(List.of(new Cqe(5, 0)), reapAll(ring));
        }
    }

    @Test
    void aClosedRingRefusesWork() {
        IoUring ring = IoUring.create(2);
        ring.close();
        ring.close(); // once is enough; again does nothing
        assertThrows(IllegalStateException.class, () -> ring.prepareNop(1));
        assertThrows(IllegalStateException.class, ring::submit);
        assertThrows(IllegalStateException.class, () -> ring.reap((userData, result, flags) -> { }));
    }

    @Test
    void aVectorOutsideTheIovecArrayIsRefused() {
        try (IoUring ring = IoUring.create(2); Arena arena = Arena.ofConfined()) {
            IoVecs v = IoVecs.allocate(arena, 2);
            assertThrows(IndexOutOfBoundsException.class, () -> ring.prepareReadv(0, 0, v, 1, 2, 0));
            assertThrows(IndexOutOfBoundsException.class, () -> ring.prepareReadv(0, 0, v, -1, 1, 0));
            assertThrows(IllegalArgumentException.class, () -> ring.prepareWritev(0, -1, v, 0, 1, 0));
            assertThrows(IllegalArgumentException.class, () -> ring.prepareFallocate(0, 0, Long.MAX_VALUE, 2, 0));
            assertEquals(2, ring.sqSpace(), "nothing was prepared");
        }
    }

    /** This machine allows io_uring, so the refusal itself cannot be provoked; what it tells the user can. */
    @Test
    void aRefusalNamesTheSettingAndTheKernel() throws IOException {
        String release = Files.readString(Path.of("/proc/sys/kernel/osrelease")).strip();
        IoUringUnavailableException eperm = IoUring.unavailable(Errno.EPERM);
        assertEquals(Errno.EPERM, eperm.errno());
        assertTrue(eperm.getMessage().contains("kernel.io_uring_disabled = "
                + Files.readString(Path.of("/proc/sys/kernel/io_uring_disabled")).strip()), eperm.getMessage());
        assertTrue(eperm.getMessage().contains(release), eperm.getMessage());
        IoUringUnavailableException enosys = IoUring.unavailable(Errno.ENOSYS);
        assertEquals(Errno.ENOSYS, enosys.errno());
        assertTrue(enosys.getMessage().contains("no io_uring"), enosys.getMessage());
    }

    @Test
    void setRestResumesInsideAnEntry() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = arena.allocate(100);
            IoVecs from = IoVecs.allocate(arena, 2);
            from.set(1, region, 10, 50);
            IoVecs rest = IoVecs.allocate(arena, 1);
            rest.setRest(0, from, 1, 20);
            assertEquals(region.address() + 30, rest.base(0));
            assertEquals(30, rest.length(0));
            assertThrows(IndexOutOfBoundsException.class, () -> rest.setRest(0, from, 1, 51));
        }
    }
}
