package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link FrameReadBatch} over a datagram socket pair (a port with whole frames, like a tap, that needs no root):
 * every frame once, in order, intact (a CRC32 over each frame's bytes, written and read); several frames per
 * system call with io_uring; the batch size following the traffic; nothing allocated per frame.
 */
@ExtendWith(NoFdLeaks.class)
@Timeout(60) // a read io_uring parked on the socket (no RWF_NOWAIT) would hang the batch: fail instead
class FrameReadBatchTest {
    private static final int FRAMES = 500;
    private static final int CAPACITY = 16;
    private static final long FRAME_BYTES = 2048;

    /** Frame {@code seq}: its length, then bytes that depend on both. */
    private static int fill(MemorySegment frame, int seq) {
        int length = 60 + (seq * 97) % 1400;
        frame.set(ValueLayout.JAVA_INT_UNALIGNED, 0, seq);
        for (int i = 4; i < length; i++) {
            frame.set(ValueLayout.JAVA_BYTE, i, (byte) (seq * 31 + i * 7));
        }
        return length;
    }

    private static long crc(MemorySegment frame, long length) {
        CRC32 c = new CRC32();
        c.update(frame.asSlice(0, length).asByteBuffer());
        return c.getValue();
    }

    @ParameterizedTest(name = "io_uring {0}")
    @ValueSource(booleans = {true, false})
    void everyFrameOnceInOrderIntact(boolean useRing) {
        try (DatagramPair p = DatagramPair.create(); Arena arena = Arena.ofConfined();
             FrameReadBatch batch = FrameReadBatch.create(p.first(), CAPACITY, FRAME_BYTES, arena, useRing)) {
            if (useRing) {
                assumeTrue(batch.batched(), "io_uring unavailable here");
            } else {
                assertTrue(!batch.batched(), "read(2) per frame when asked");
            }
            MemorySegment out = arena.allocate(FRAME_BYTES);
            long[] sentCrc = new long[FRAMES];
            int sent = 0;
            int received = 0;
            int batches = 0;
            int mostInOneBatch = 0;
            while (received < FRAMES) {
                // Fill the pair until it pushes back, then drain it: the batches meet a full and an empty port.
                while (sent < FRAMES) {
                    int length = fill(out, sent);
                    long w = p.second().write(out, length);
                    if (w == -Errno.EAGAIN) {
                        break;
                    }
                    assertEquals(length, w);
                    sentCrc[sent++] = crc(out, length);
                }
                boolean drained = false;
                while (!drained) {
                    int made = batch.read(CAPACITY);
                    batches++;
                    assertTrue(made >= 1 && made <= CAPACITY, "reads made " + made);
                    int frames = 0;
                    for (int i = 0; i < made; i++) {
                        long length = batch.length(i);
                        if (length == -Errno.EAGAIN) {
                            continue;
                        }
                        assertTrue(length > 0, "read " + i + " failed: " + length);
                        MemorySegment f = batch.frame(i);
                        int seq = f.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                        assertEquals(received, seq, "frames in the order they were sent, none twice, none lost");
                        assertEquals(sentCrc[seq], crc(f, length), "frame " + seq + " intact");
                        received++;
                        frames++;
                    }
                    mostInOneBatch = Math.max(mostInOneBatch, frames);
                    drained = batch.length(made - 1) == -Errno.EAGAIN;
                }
            }
            assertEquals(FRAMES, sent);
            assertEquals(FRAMES, received);
            assertEquals(-Errno.EAGAIN, batch.length(batch.read(CAPACITY) - 1), "nothing more");
            if (useRing) {
                assertTrue(mostInOneBatch > 1, "several frames per system call: at most " + mostInOneBatch);
                assertTrue(batches < FRAMES / 2, batches + " system calls for " + FRAMES + " frames");
            } else {
                assertTrue(batches >= FRAMES / CAPACITY, batches + " batches");
            }
        }
    }

    @Test
    void theBatchFollowsTheTraffic() {
        try (DatagramPair p = DatagramPair.create(); Arena arena = Arena.ofConfined();
             FrameReadBatch batch = FrameReadBatch.create(p.first(), CAPACITY, FRAME_BYTES, arena, true)) {
            assumeTrue(batch.batched(), "io_uring unavailable here");
            MemorySegment out = arena.allocate(FRAME_BYTES);
            for (int seq = 0; seq < 8; seq++) {
                assertEquals(100, p.second().write(out.fill((byte) seq), 100));
            }
            // Two reads first, doubling while the last read finds a frame; the next drain starts with one more read
            // than the last drain found frames.
            assertBatch(batch, 2, 2, 0);
            assertBatch(batch, 4, 4, 2);
            assertBatch(batch, 8, 2, 6);
            assertEquals(100, p.second().write(out.fill((byte) 8), 100));
            assertBatch(batch, 9, 1, 8);
            assertBatch(batch, 2, 0, -1);
            assertBatch(batch, 2, 0, -1); // never below two: a wake-up means a frame, the second read ends the drain
            // The caller's bound wins over the batch's size.
            for (int seq = 9; seq < 12; seq++) {
                assertEquals(100, p.second().write(out.fill((byte) seq), 100));
            }
            assertEquals(1, batch.read(1));
            assertEquals(100, batch.length(0));
            assertEquals((byte) 9, batch.frame(0).get(ValueLayout.JAVA_BYTE, 0));
        }
    }

    /** A batch makes {@code made} reads, the first {@code frames} of them frames starting at {@code firstByte}. */
    private static void assertBatch(FrameReadBatch batch, int made, int frames, int firstByte) {
        assertEquals(made, batch.read(CAPACITY), "reads in the batch");
        assertEquals(1, batch.systemCalls(), "one io_uring_enter for the batch");
        for (int i = 0; i < made; i++) {
            if (i < frames) {
                assertEquals(100, batch.length(i), "read " + i);
                assertEquals((byte) (firstByte + i), batch.frame(i).get(ValueLayout.JAVA_BYTE, 0), "read " + i);
            } else {
                assertEquals(-Errno.EAGAIN, batch.length(i), "read " + i + " finds the port empty");
            }
        }
    }

    @Test
    void refusesWhatItCannotDo() {
        try (DatagramPair p = DatagramPair.create(); Arena arena = Arena.ofConfined()) {
            assertThrows(IllegalArgumentException.class, () -> FrameReadBatch.create(p.first(), 1, FRAME_BYTES, arena, true));
            assertThrows(IllegalArgumentException.class, () -> FrameReadBatch.create(p.first(), 4, 0, arena, true));
            try (FrameReadBatch batch = FrameReadBatch.create(p.first(), 4, FRAME_BYTES, arena, true)) {
                assertThrows(IllegalArgumentException.class, () -> batch.read(0));
                assertThrows(IllegalArgumentException.class, () -> batch.read(5));
                int made = batch.read(4);
                assertThrows(IndexOutOfBoundsException.class, () -> batch.length(made));
                assertThrows(IndexOutOfBoundsException.class, () -> batch.frame(-1));
            }
        }
    }

    @Test
    void framesMoveWithoutAllocatingWithoutC2() {
        C1Child child = C1Child.run(FrameReadBatchTest.class, 3);
        long frames = child.figure(0);
        long allocated = child.figure(1);
        assertEquals(2L * 2 * 8 * 2000, frames, child.output());
        // a per-frame allocation (the JDK's errno capture slices 40 bytes) would be tens of bytes per frame
        assertTrue(allocated < frames / 2,
                allocated + " bytes allocated over " + frames + " frames (" + child.figures()[2] + ")");
    }

    /**
     * The child: writes frames with {@link FramePort#write} and reads them back through a batch, with io_uring
     * (each drain ending on a read that finds the port empty) and with read(2) (reading exactly what was written:
     * a failed read(2) is made again with errno captured, which allocates, once per drain); prints the frames
     * moved, the bytes this thread allocated moving them, and whether io_uring was used.
     */
    public static void main(String[] args) {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (DatagramPair p = DatagramPair.create(); Arena arena = Arena.ofConfined();
             FrameReadBatch ring = FrameReadBatch.create(p.first(), CAPACITY, FRAME_BYTES, arena, true);
             FrameReadBatch each = FrameReadBatch.create(p.first(), CAPACITY, FRAME_BYTES, arena, false)) {
            MemorySegment out = arena.allocate(FRAME_BYTES);
            long frames = 0;
            long allocated = 0;
            for (int pass = 0; pass < 2; pass++) { // the first links the method handles
                long before = threads.getCurrentThreadAllocatedBytes();
                frames = 0;
                for (int round = 0; round < 2000; round++) {
                    frames += move(p, out, ring, true);
                    frames += move(p, out, each, false);
                }
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
            }
            System.out.println(frames + " " + allocated + " " + (ring.batched() ? "io_uring" : "read(2)"));
        }
    }

    /** Writes 8 frames and reads them back: returns the frames written plus those read. */
    private static long move(DatagramPair p, MemorySegment out, FrameReadBatch batch, boolean untilEmpty) {
        for (int i = 0; i < 8; i++) {
            out.set(ValueLayout.JAVA_INT_UNALIGNED, 0, i);
            if (p.second().write(out, 100) != 100) {
                throw new IllegalStateException("write " + i);
            }
        }
        int got = 0;
        while (got < 8 || untilEmpty) {
            int made = batch.read(untilEmpty ? CAPACITY : 8 - got);
            for (int i = 0; i < made; i++) {
                long length = batch.length(i);
                if (length == 100 && batch.frame(i).get(ValueLayout.JAVA_INT_UNALIGNED, 0) == got) {
                    got++;
                } else if (length != -Errno.EAGAIN) {
                    throw new IllegalStateException("read " + i + ": " + length);
                }
            }
            if (untilEmpty && batch.length(made - 1) == -Errno.EAGAIN) {
                break;
            }
        }
        if (got != 8) {
            throw new IllegalStateException("read " + got + " of 8");
        }
        return 16;
    }
}
