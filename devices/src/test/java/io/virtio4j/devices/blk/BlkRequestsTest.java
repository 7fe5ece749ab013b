package io.virtio4j.devices.blk;

import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockIo;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.devices.blk.io.NullBlockIo;
import io.virtio4j.os.BlockFile;
import io.virtio4j.os.Errno;
import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static io.virtio4j.testkit.Bytes.random;
import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * virtio-blk requests end to end on one queue, from a driver's ring through {@link BlkRequests} and a real engine to
 * a temporary file: data checksummed after the round trip, and every rule of the request format broken once (the
 * queue answers with a status and goes on serving). Every case runs over every engine: the guest must see the same
 * answers whichever {@code --io} serves it.
 */
@ExtendWith(NoFdLeaks.class)
@ParameterizedClass
@EnumSource(BlockEngine.class)
class BlkRequestsTest {
    private static final int FILE_BYTES = 1 << 20;
    private static final long CAPACITY_SECTORS = FILE_BYTES / 512;
    private static final int STATUS_UNTOUCHED = 0xEE;
    private static final Path TMPFS = Path.of("/dev/shm");

    @Parameter
    BlockEngine engine;
    @TempDir
    Path dir;
    private BlockStore store;
    private BlkRig rig;
    /** A directory on tmpfs the test made (and removes), or null: the file is in {@link #dir}. */
    private Path tmpfsDir;

    @AfterEach
    void close() throws IOException {
        if (rig != null) {
            rig.close();
        }
        if (store != null) {
            store.close();
        }
        if (tmpfsDir != null) {
            Files.deleteIfExists(tmpfsDir.resolve("disk.img"));
            Files.delete(tmpfsDir);
        }
    }

    private Path file() throws IOException {
        Path f = (tmpfsDir != null ? tmpfsDir : dir).resolve("disk.img");
        if (!Files.exists(f)) {
            try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
                r.setLength(FILE_BYTES);
            }
        }
        return f;
    }

    private BlkRig rig(RingFormat format, boolean readOnly, int blockSize, long features) throws IOException {
        store = BlockStore.open(file().toString(), readOnly, blockSize);
        rig = new BlkRig(format, store, engine.open(store, 16), features);
        return rig;
    }

    private BlkRig rig() throws IOException {
        return rig(RingFormat.SPLIT, false, 512, BlkRig.WRITEBACK_FEATURES);
    }

    private byte[] fileBytes(long offset, int n) throws IOException {
        byte[] all = Files.readAllBytes(file());
        return Arrays.copyOfRange(all, (int) offset, (int) offset + n);
    }

    /** A write of {@code data} at {@code sector}: header, data in one descriptor, status; returns the status address. */
    private long write(long sector, byte[] data, ScatterGather sg) {
        long h = rig.header(BlkLayout.T_OUT, sector);
        long d = rig.alloc(data.length);
        rig.put(d, data);
        long s = rig.alloc(1);
        sg.clear().readable(h, 16).readable(d, data.length).writable(s, 1);
        return s;
    }

    /** Asserts one request was answered {@code status} with used length {@code usedLength}. */
    private void assertAnswered(ScatterGather sg, long statusAt, int status, long usedLength) {
        assertEquals(usedLength, rig.one(sg), "used length");
        assertEquals(status, rig.status(statusAt), "status");
    }

    /** The queue still serves a good request after a hostile one. */
    private void assertStillServing() {
        byte[] data = random(512, 99);
        ScatterGather sg = new ScatterGather(4);
        long s = write(3, data, sg);
        assertAnswered(sg, s, BlkLayout.S_OK, 1);
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void writtenDataReadsBackIntactWhateverTheDescriptorLayout(RingFormat format) throws IOException {
        rig(format, false, 512, BlkRig.WRITEBACK_FEATURES);
        byte[] data = random(64 * 1024, 1);
        // header alone, the data in three pieces of odd sizes (still a multiple of 512 in all), status alone
        long h = rig.header(BlkLayout.T_OUT, 8);
        long d = rig.alloc(data.length);
        rig.put(d, data);
        long s = rig.alloc(1);
        ScatterGather sg = new ScatterGather(8).readable(h, 16).readable(d, 1000).readable(d + 1000, 40_000)
                .readable(d + 41_000, data.length - 41_000).writable(s, 1);
        assertAnswered(sg, s, BlkLayout.S_OK, 1);
        assertEquals(crc(data), crc(fileBytes(8 * 512, data.length)), "the file holds what was written");

        // read it back: data and status in one writable descriptor, header and nothing else readable
        long h2 = rig.header(BlkLayout.T_IN, 8);
        long buf = rig.alloc(data.length + 1);
        ScatterGather in = new ScatterGather(4).readable(h2, 16).writable(buf, 333).writable(buf + 333, data.length + 1 - 333);
        assertAnswered(in, buf + data.length, BlkLayout.S_OK, data.length + 1);
        assertEquals(crc(data), crc(rig.bytes(buf, data.length)), "the read returns what was written");

        // header and data in one readable descriptor
        byte[] more = random(4096, 2);
        long hd = rig.header(BlkLayout.T_OUT, 100);
        long d2 = rig.alloc(more.length);
        assertEquals(hd + 512, d2, "the rig allocates in 512-byte steps");
        rig.put(hd + 16, more);
        long s2 = rig.alloc(1);
        assertAnswered(new ScatterGather(2).readable(hd, 16 + more.length).writable(s2, 1), s2, BlkLayout.S_OK, 1);
        assertArrayEquals(more, fileBytes(100 * 512, more.length));
        assertEquals(2, rig.stats.writes());
        assertEquals(1, rig.stats.reads());
        assertEquals(data.length + more.length, rig.stats.bytesWritten());
        assertEquals(data.length, rig.stats.bytesRead());
    }

    @Test
    void aSectorPastTheCapacityIsAnIoError() throws IOException {
        rig();
        for (long sector : new long[] {CAPACITY_SECTORS, CAPACITY_SECTORS - 1, -8L /* 2^64 - 8: sector + length overflows */}) {
            ScatterGather sg = new ScatterGather(4);
            long s = write(sector, new byte[1024], sg);
            assertAnswered(sg, s, BlkLayout.S_IOERR, 1);
        }
        // a read of the last sector is fine, one more is not
        long h = rig.header(BlkLayout.T_IN, CAPACITY_SECTORS - 1);
        long b = rig.alloc(513);
        assertAnswered(new ScatterGather(2).readable(h, 16).writable(b, 513), b + 512, BlkLayout.S_OK, 513);
        long h2 = rig.header(BlkLayout.T_IN, CAPACITY_SECTORS);
        long b2 = rig.alloc(513);
        assertAnswered(new ScatterGather(2).readable(h2, 16).writable(b2, 513), b2 + 512, BlkLayout.S_IOERR, 1);
        assertEquals(4, rig.stats.invalid());
        assertStillServing();
    }

    @Test
    void dataNotAMultipleOfTheBlockSizeIsAnIoError() throws IOException {
        rig();
        ScatterGather sg = new ScatterGather(4);
        long s = write(0, new byte[700], sg);
        assertAnswered(sg, s, BlkLayout.S_IOERR, 1);
        long h = rig.header(BlkLayout.T_IN, 0);
        long b = rig.alloc(101);
        assertAnswered(new ScatterGather(2).readable(h, 16).writable(b, 101), b + 100, BlkLayout.S_IOERR, 1);
        assertStillServing();
    }

    @Test
    void onA4kDeviceA512ByteRequestOrAnUnalignedSectorIsAnIoError() throws IOException {
        rig(RingFormat.SPLIT, false, 4096, BlkRig.WRITEBACK_FEATURES);
        ScatterGather sg = new ScatterGather(4);
        long s = write(0, new byte[512], sg);
        assertAnswered(sg, s, BlkLayout.S_IOERR, 1);
        s = write(1, new byte[4096], sg);
        assertAnswered(sg, s, BlkLayout.S_IOERR, 1);
        s = write(8, new byte[4096], sg);
        assertAnswered(sg, s, BlkLayout.S_OK, 1);
    }

    @Test
    void aShortOrWritableHeaderIsAnIoError() throws IOException {
        rig();
        long h = rig.header(BlkLayout.T_OUT, 0);
        long s = rig.alloc(1);
        assertAnswered(new ScatterGather(2).readable(h, 15).writable(s, 1), s, BlkLayout.S_IOERR, 1);
        // the header writable: nothing readable at all
        long h2 = rig.header(BlkLayout.T_IN, 0);
        long b = rig.alloc(513);
        assertAnswered(new ScatterGather(2).writable(h2, 16).writable(b, 513), b + 512, BlkLayout.S_IOERR, 1);
        assertEquals(2, rig.stats.invalid());
        assertStillServing();
    }

    @Test
    void aRequestWithNoWritableByteGoesBackUnansweredAndTheQueueGoesOn() throws IOException {
        rig();
        byte[] before = fileBytes(0, 512);
        // status missing
        long h = rig.header(BlkLayout.T_OUT, 0);
        long d = rig.alloc(512);
        rig.put(d, random(512, 5));
        assertEquals(0, rig.one(new ScatterGather(2).readable(h, 16).readable(d, 512)));
        // status readable (one byte after the data, readable)
        long s = rig.alloc(1);
        assertEquals(0, rig.one(new ScatterGather(3).readable(h, 16).readable(d, 512).readable(s, 1)));
        assertEquals(STATUS_UNTOUCHED, rig.status(s), "a readable status is not written");
        assertEquals(2, rig.stats.malformed());
        assertArrayEquals(before, fileBytes(0, 512), "nothing was written");
        assertFalse(rig.device.isBroken());
        assertStillServing();
    }

    @Test
    void aStatusOfMoreThanOneByteOnAWriteIsAnIoError() throws IOException {
        rig();
        long h = rig.header(BlkLayout.T_OUT, 0);
        long d = rig.alloc(512);
        long s = rig.alloc(2);
        byte[] before = fileBytes(0, 512);
        // the last writable byte is the status: it gets the answer, the write does not happen
        assertAnswered(new ScatterGather(3).readable(h, 16).readable(d, 512).writable(s, 2), s + 1, BlkLayout.S_IOERR, 1);
        assertArrayEquals(before, fileBytes(0, 512));
    }

    @Test
    void writableDataOnAWriteAndReadableDataOnAReadAreIoErrors() throws IOException {
        rig();
        byte[] before = fileBytes(0, 512);
        long h = rig.header(BlkLayout.T_OUT, 0);
        long d = rig.alloc(513);
        assertAnswered(new ScatterGather(2).readable(h, 16).writable(d, 513), d + 512, BlkLayout.S_IOERR, 1);
        long h2 = rig.header(BlkLayout.T_IN, 0);
        long d2 = rig.alloc(512);
        long s2 = rig.alloc(1);
        assertAnswered(new ScatterGather(3).readable(h2, 16).readable(d2, 512).writable(s2, 1), s2, BlkLayout.S_IOERR, 1);
        assertEquals((byte) 0xEE, rig.bytes(d2, 1)[0], "nothing read into readable memory");
        assertArrayEquals(before, fileBytes(0, 512));
        assertStillServing();
    }

    private long ranged(int type, long sector, int sectors, int flags, int segments) {
        long h = rig.header(type, 0);
        ScatterGather sg = new ScatterGather(8).readable(h, 16);
        for (int i = 0; i < segments; i++) {
            sg.readable(rig.segment(sector, sectors, flags), 16);
        }
        long s = rig.alloc(1);
        sg.writable(s, 1);
        rig.one(sg);
        return rig.status(s);
    }

    @Test
    void discardAndWriteZeroesRefuseBadSegments() throws IOException {
        rig();
        for (int type : new int[] {BlkLayout.T_DISCARD, BlkLayout.T_WRITE_ZEROES}) {
            assertEquals(BlkLayout.S_IOERR, ranged(type, 0, 8, 0, 0), "no segment");
            assertEquals(BlkLayout.S_IOERR, ranged(type, 0, 8, 0, 2), "two segments: max_*_seg is 1");
            assertEquals(BlkLayout.S_IOERR, ranged(type, 0, (int) BlkDevice.MAX_DISCARD_SECTORS + 1, 0, 1),
                    "more than max_*_sectors");
            assertEquals(BlkLayout.S_IOERR, ranged(type, CAPACITY_SECTORS - 4, 8, 0, 1), "past the capacity");
            assertEquals(BlkLayout.S_IOERR, ranged(type, 0, 0, 0, 1), "no sectors");
            assertEquals(BlkLayout.S_UNSUPP, ranged(type, 0, 8, 0x2, 1), "an unknown flag");
        }
        assertEquals(BlkLayout.S_UNSUPP, ranged(BlkLayout.T_DISCARD, 0, 8, BlkLayout.SEGMENT_FLAG_UNMAP, 1),
                "UNMAP on DISCARD");
        assertStillServing();
    }

    /**
     * On the disk file system of the temporary directory and on tmpfs, which has holes but no ZERO_RANGE: the
     * answers and the bytes are the same on both, whatever the engine.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void discardAndWriteZeroesReadBackAsZeros(boolean onTmpfs) throws IOException {
        if (onTmpfs) {
            assumeTrue(Files.isDirectory(TMPFS), "no " + TMPFS);
            tmpfsDir = Files.createTempDirectory(TMPFS, "blk-requests");
        }
        rig();
        for (int type : new int[] {BlkLayout.T_DISCARD, BlkLayout.T_WRITE_ZEROES}) {
            for (int flags : type == BlkLayout.T_DISCARD ? new int[] {0} : new int[] {0, BlkLayout.SEGMENT_FLAG_UNMAP}) {
                // more than one 64 KiB zero chunk, and not a whole number of them: 128 + 33 sectors
                int sectors = 161;
                int n = sectors * 512;
                ScatterGather sg = new ScatterGather(4);
                long s = write(16, random(n + 1024, type + flags), sg);
                assertAnswered(sg, s, BlkLayout.S_OK, 1);
                byte[] after = fileBytes((16 + sectors) * 512L, 1024);
                assertEquals(BlkLayout.S_OK, ranged(type, 16, sectors, flags, 1));
                assertArrayEquals(new byte[n], fileBytes(16 * 512, n), "type " + type + " flags " + flags);
                assertEquals(crc(after), crc(fileBytes((16 + sectors) * 512L, 1024)), "the bytes past the range kept");
            }
        }
        assertEquals(1, rig.stats.discards());
        assertEquals(2, rig.stats.writeZeroes());
    }

    @Test
    void discardNotNegotiatedIsUnsupported() throws IOException {
        rig(RingFormat.SPLIT, false, 512, BlkLayout.bit(BlkLayout.F_FLUSH));
        assertEquals(BlkLayout.S_UNSUPP, ranged(BlkLayout.T_DISCARD, 0, 8, 0, 1));
        assertEquals(BlkLayout.S_UNSUPP, ranged(BlkLayout.T_WRITE_ZEROES, 0, 8, 0, 1));
    }

    @Test
    void aFlushWithASectorIsAnIoErrorAndWithoutOne() throws IOException {
        rig();
        long h = rig.header(BlkLayout.T_FLUSH, 1);
        long s = rig.alloc(1);
        assertAnswered(new ScatterGather(2).readable(h, 16).writable(s, 1), s, BlkLayout.S_IOERR, 1);
        long h2 = rig.header(BlkLayout.T_FLUSH, 0);
        long s2 = rig.alloc(1);
        assertAnswered(new ScatterGather(2).readable(h2, 16).writable(s2, 1), s2, BlkLayout.S_OK, 1);
        assertEquals(1, rig.stats.flushes());
    }

    @Test
    void unknownTypesAreUnsupported() throws IOException {
        rig();
        for (int type : new int[] {2, 3, 10, 14, 15, 0x8000_0001, -1}) {
            long h = rig.header(type, 0);
            long s = rig.alloc(1);
            assertAnswered(new ScatterGather(2).readable(h, 16).writable(s, 1), s, BlkLayout.S_UNSUPP, 1);
        }
        assertEquals(7, rig.stats.unsupported());
        assertStillServing();
    }

    @Test
    void aWriteToAReadOnlyDeviceIsAnIoErrorAndWritesNothing() throws IOException {
        byte[] before = Files.readAllBytes(file());
        rig(RingFormat.SPLIT, true, 512, BlkLayout.bit(BlkLayout.F_FLUSH) | BlkLayout.bit(BlkLayout.F_RO));
        ScatterGather sg = new ScatterGather(4);
        long s = write(0, random(4096, 7), sg);
        assertAnswered(sg, s, BlkLayout.S_IOERR, 1);
        assertArrayEquals(before, Files.readAllBytes(file()));
        // reads still work
        long h = rig.header(BlkLayout.T_IN, 0);
        long b = rig.alloc(513);
        assertAnswered(new ScatterGather(2).readable(h, 16).writable(b, 513), b + 512, BlkLayout.S_OK, 513);
    }

    @Test
    void getIdAnswersTheSerialPaddedAndRefusesASmallBuffer() throws IOException {
        rig();
        long h = rig.header(BlkLayout.T_GET_ID, 0);
        long b = rig.alloc(21);
        assertAnswered(new ScatterGather(2).readable(h, 16).writable(b, 21), b + 20, BlkLayout.S_OK, 21);
        byte[] expected = Arrays.copyOf("test-serial".getBytes(), 20);
        assertArrayEquals(expected, rig.bytes(b, 20));
        long h2 = rig.header(BlkLayout.T_GET_ID, 0);
        long b2 = rig.alloc(20);
        assertAnswered(new ScatterGather(2).readable(h2, 16).writable(b2, 20), b2 + 19, BlkLayout.S_IOERR, 1);
        assertEquals((byte) 0xEE, rig.bytes(b2, 1)[0], "nothing written into a buffer too small");
    }

    @Test
    void writesAreFlushedWhenTheDriverCannotAskForFlushes() throws IOException {
        rig(RingFormat.SPLIT, false, 512, 0); // neither FLUSH nor CONFIG_WCE: write-through
        ScatterGather sg = new ScatterGather(4);
        long s = write(0, random(512, 3), sg);
        assertAnswered(sg, s, BlkLayout.S_OK, 1);
        assertEquals(1, rig.stats.writeThroughSyncs());
    }

    @Test
    void withConfigWceTheWritebackFieldDecides() throws IOException {
        rig(RingFormat.SPLIT, false, 512, BlkLayout.bit(BlkLayout.F_FLUSH) | BlkLayout.bit(BlkLayout.F_CONFIG_WCE));
        ScatterGather sg = new ScatterGather(4);
        long s = write(0, random(512, 3), sg);
        assertAnswered(sg, s, BlkLayout.S_OK, 1);
        assertEquals(0, rig.stats.writeThroughSyncs(), "writeback: the driver flushes");
        rig.cache.writeback(false);
        s = write(0, random(512, 4), sg);
        assertAnswered(sg, s, BlkLayout.S_OK, 1);
        assertEquals(1, rig.stats.writeThroughSyncs(), "writethrough: each write is made durable");
    }

    @Test
    void manyRequestsInFlightCompleteOutOfOrderAndEachComesBackOnce() throws IOException {
        store = BlockStore.open(file().toString(), false, 512);
        rig = new BlkRig(RingFormat.SPLIT, store, new ReorderingBlockIo(engine.open(store, 16), 2), 0);
        int n = 20; // more than the 16 slots: the ring holds the rest until slots free up (3 descriptors each)
        byte[][] data = new byte[n][];
        long[] status = new long[n];
        ScatterGather sg = new ScatterGather(4);
        for (int i = 0; i < n; i++) {
            data[i] = random(2048, 100 + i);
            status[i] = write(i * 4L, data[i], sg);
            rig.post(sg);
        }
        Map<Integer, Long> used = rig.serve(n);
        for (int i = 0; i < n; i++) {
            assertEquals(1L, used.get(i));
            assertEquals(BlkLayout.S_OK, rig.status(status[i]), "write " + i);
        }
        long[] buf = new long[n];
        for (int i = 0; i < n; i++) {
            long h = rig.header(BlkLayout.T_IN, i * 4L);
            buf[i] = rig.alloc(2049);
            rig.post(sg.clear().readable(h, 16).writable(buf[i], 2049));
        }
        used = rig.serve(n);
        for (int i = 0; i < n; i++) {
            assertEquals(2049L, used.get(n + i));
            assertEquals(BlkLayout.S_OK, rig.status(buf[i] + 2048));
            assertEquals(crc(data[i]), crc(rig.bytes(buf[i], 2048)), "read " + i);
        }
        assertEquals(n, rig.stats.writeThroughSyncs(), "features 0: every write flushed before completing");
    }

    @Test
    void stoppingWaitsForTheRequestsInFlightAndAnswersThemAll() throws IOException {
        store = BlockStore.open(file().toString(), false, 512);
        rig = new BlkRig(RingFormat.PACKED, store, new ReorderingBlockIo(engine.open(store, 16), 5),
                BlkRig.WRITEBACK_FEATURES);
        ScatterGather sg = new ScatterGather(4);
        byte[][] data = new byte[12][];
        long[] status = new long[12];
        for (int i = 0; i < 12; i++) {
            data[i] = random(1024, 200 + i);
            status[i] = write(i * 2L, data[i], sg);
            rig.post(sg);
        }
        rig.requests.pass(64);
        assertEquals(12, rig.requests.inFlight(), "every write is in the engine's hands");
        rig.requests.drain();
        assertEquals(0, rig.requests.inFlight());
        int back = 0;
        while (rig.driver.pollUsed() != null) {
            back++;
        }
        assertEquals(12, back, "each request came back once the drain returned");
        for (int i = 0; i < 12; i++) {
            assertEquals(BlkLayout.S_OK, rig.status(status[i]));
            assertArrayEquals(data[i], fileBytes(i * 1024L, 1024));
        }
    }

    /**
     * A pass takes requests up to a byte budget, not only up to its weight: the synchronous engine does them right
     * in it, and 64 requests of a GiB each would keep the queue thread from its mailbox for minutes. The request
     * that crosses the budget still goes; the rest come in later passes, every one answered once.
     */
    @Test
    void aPassTakesRequestsUpToItsByteBudget() throws IOException {
        long capacity = 64L << 30;
        store = BlockStore.ofNull(capacity, false, 512);
        rig = new BlkRig(RingFormat.SPLIT, store, engine.open(store, 16), BlkRig.WRITEBACK_FEATURES);
        int sectors = (int) BlkDevice.MAX_DISCARD_SECTORS; // 1 GiB each: every one crosses the budget alone
        assertTrue(((long) sectors << 9) >= BlkRequests.PASS_BYTES);
        ScatterGather sg = new ScatterGather(4);
        int n = 5;
        long[] status = new long[n];
        for (int i = 0; i < n; i++) {
            long h = rig.header(BlkLayout.T_WRITE_ZEROES, 0);
            long seg = rig.segment((long) i * sectors, sectors, 0);
            status[i] = rig.alloc(1);
            rig.post(sg.clear().readable(h, 16).readable(seg, BlkLayout.SEGMENT_BYTES).writable(status[i], 1));
        }
        rig.requests.pass(64);
        int back = 0;
        while (rig.driver.pollUsed() != null) {
            back++;
        }
        assertEquals(1, back, "one pass took more than its byte budget");
        assertEquals(n - 1, rig.serve(n - 1).size());
        for (int i = 0; i < n; i++) {
            assertEquals(BlkLayout.S_OK, rig.status(status[i]), "request " + i);
        }
    }

    /**
     * A write-zeroes written as zeros in steps (tmpfs has no ZERO_RANGE) keeps the synchronous engine busy over
     * several passes with nothing finished in between: each of those passes reports work, or the queue thread would
     * go to sleep with a step to reap and nothing to wake it. 128 MiB is more than two steps.
     */
    @Test
    void aPassWithZerosStillToWriteReportsWork() throws IOException {
        assumeTrue(engine == BlockEngine.SYNC, "the asynchronous engine wakes the thread through its eventfd");
        assumeTrue(Files.isDirectory(TMPFS), "no " + TMPFS);
        tmpfsDir = Files.createTempDirectory(TMPFS, "blk-requests");
        int sectors = 128 * 2048;
        try (RandomAccessFile r = new RandomAccessFile(tmpfsDir.resolve("disk.img").toFile(), "rw")) {
            r.setLength((long) sectors * 512);
        }
        rig();
        assumeTrue(store.file().io().fallocate(BlockFile.ZERO_MODE, 0, 4096) == -Errno.EOPNOTSUPP,
                "tmpfs has no ZERO_RANGE on this kernel");
        long h = rig.header(BlkLayout.T_WRITE_ZEROES, 0);
        long seg = rig.segment(0, sectors, 0);
        long s = rig.alloc(1);
        rig.post(new ScatterGather(4).readable(h, 16).readable(seg, BlkLayout.SEGMENT_BYTES).writable(s, 1));
        int passes = 0;
        while (rig.driver.pollUsed() == null) {
            assertTrue(rig.requests.pass(16) > 0, "a pass with zeros still to write reported no work");
            assertTrue(++passes < 1000, "the write-zeroes never finished");
        }
        assertTrue(passes > 2, "written in " + passes + " passes: not in steps");
        assertEquals(BlkLayout.S_OK, rig.status(s));
        assertEquals(0, rig.requests.inFlight());
    }

    @Test
    void theNullStoreLeavesReadBuffersAsTheyWere() throws IOException {
        store = BlockStore.ofNull(FILE_BYTES, false, 512);
        BlockIo io = engine.open(store, 8);
        assertEquals(NullBlockIo.class, io.getClass());
        rig = new BlkRig(RingFormat.SPLIT, store, io, BlkRig.WRITEBACK_FEATURES);
        ScatterGather sg = new ScatterGather(4);
        long s = write(0, random(512, 1), sg);
        assertAnswered(sg, s, BlkLayout.S_OK, 1);
        long h = rig.header(BlkLayout.T_IN, 0);
        long b = rig.alloc(513);
        assertAnswered(new ScatterGather(2).readable(h, 16).writable(b, 513), b + 512, BlkLayout.S_OK, 513);
        byte[] untouched = new byte[512];
        Arrays.fill(untouched, (byte) 0xEE);
        assertArrayEquals(untouched, rig.bytes(b, 512));
    }
}
