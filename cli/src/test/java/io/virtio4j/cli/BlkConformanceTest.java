package io.virtio4j.cli;

import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.BlkConfig;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.driver.BlkDriver;
import io.virtio4j.testkit.BackendProcess;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import java.util.zip.CRC32C;

import static io.virtio4j.cli.PeerRuns.field;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The virtio-blk conformance suite: one set of checks, run through our front-end ({@link BlkDriver}, and
 * {@code drive blk}) against two vhost-user-blk back-ends, QEMU's qemu-storage-daemon ({@code peers/qsd.sh}) and
 * ours ({@code serve blk}, on split and on packed rings), each exporting a fresh image file per test. Data written is
 * read back intact (CRC32C) and found in the image file; FLUSH completes; WRITE_ZEROES reads back as zeros, DISCARD
 * as zeros or as it was; requests past the end fail with IOERR and change nothing; the configuration space
 * describes the image; GET_ID answers; every queue serves requests; a read-only export refuses writes with IOERR; a
 * second front-end finds what the first wrote. qemu-storage-daemon is the reference: a check that fails on it is a
 * wrong check.
 */
class BlkConformanceTest {
    private static final long IMAGE_BYTES = 8L << 20;
    private static final long SECTORS = IMAGE_BYTES / BlkLayout.SECTOR;
    private static final Duration PATIENCE = Duration.ofSeconds(30);
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    /**
     * A back-end, the ring format our front-end drives it with (qemu-storage-daemon offers split rings only) and, for
     * serve blk, more of its options (an I/O engine: {@code "--io", "io_uring"}).
     */
    enum Backend {
        QEMU_STORAGE_DAEMON(false, RingFormat.SPLIT), SERVE_BLK(true, RingFormat.SPLIT), SERVE_BLK_PACKED(true, RingFormat.PACKED);

        final boolean ours;
        final RingFormat ring;
        final List<String> serveOptions;

        Backend(boolean ours, RingFormat ring, String... serveOptions) {
            this.ours = ours;
            this.ring = ring;
            this.serveOptions = List.of(serveOptions);
        }
    }

    @TempDir
    Path dir;

    /** A back-end process exporting {@code image}; closing it sends SIGTERM and waits. */
    private record Peer(BackendProcess backend, Path socket, Path image, RingFormat ring) implements AutoCloseable {
        /** Stops the back-end and returns what it printed. */
        String stop() throws InterruptedException, IOException {
            return backend.stop();
        }

        Process process() {
            return backend.process();
        }

        @Override
        public void close() throws InterruptedException, IOException {
            backend.close();
        }
    }

    private Peer start(Backend backend, int queues, boolean readOnly) throws IOException {
        Path image = dir.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(IMAGE_BYTES);
        }
        Path socket = dir.resolve("blk.sock");
        Path log = dir.resolve("backend.log");
        List<String> argv = new ArrayList<>();
        if (backend.ours) {
            argv.addAll(List.of(PeerRuns.cli().split(" ")));
            argv.addAll(List.of("serve", "blk", "--socket", socket.toString(), "--file", image.toString(),
                    "--queues", Integer.toString(queues)));
            argv.addAll(backend.serveOptions);
            if (readOnly) {
                argv.add("--read-only");
            }
        } else {
            if (!Files.isExecutable(Path.of("/usr/bin/qemu-storage-daemon"))) {
                fail("qemu-storage-daemon is not installed: run peers/install.sh as root (./virtio4j test does)");
            }
            argv.addAll(List.of("bash", PeerRuns.script("qsd.sh").toString(), "--socket", socket.toString(), "--image",
                    image.toString(), "--queues", Integer.toString(queues)));
            if (readOnly) {
                argv.add("--read-only");
            }
        }
        return new Peer(BackendProcess.start(argv, log), socket, image, backend.ring);
    }

    private static BlkDriver connect(Peer peer, int queues) throws InterruptedException {
        return BlkDriver.connect(peer.socket(), BlkDriver.Config.defaults().withQueues(queues).withDepth(16)
                .withMaxRequestBytes(64 << 10).withFormat(peer.ring()), PATIENCE);
    }

    /** One request on {@code q}, prepared by {@code queue} with its slot, run to completion: its status. */
    private static int one(BlkDriver d, int q, IntConsumer queue) throws InterruptedException {
        int slot = d.acquire(q);
        assertTrue(slot >= 0, "a free slot");
        queue.accept(slot);
        return d.run(q, slot, TIMEOUT);
    }

    private static int write(BlkDriver d, int q, long sector, byte[] data) throws InterruptedException {
        return one(d, q, slot -> {
            d.data(q, slot).copyFrom(MemorySegment.ofArray(data));
            d.write(q, slot, sector, data.length);
        });
    }

    /** Reads {@code bytes} at {@code sector}; the data, or null when the status was not OK ({@code status[0]}). */
    private static byte[] read(BlkDriver d, int q, long sector, int bytes, int[] status) throws InterruptedException {
        int slot = d.acquire(q);
        assertTrue(slot >= 0, "a free slot");
        d.data(q, slot).asSlice(0, bytes).fill((byte) 0x5A); // a read that writes nothing is caught
        d.read(q, slot, sector, bytes);
        status[0] = d.run(q, slot, TIMEOUT);
        // the slot is free again, its data stay until it is used again
        return status[0] == BlkLayout.S_OK ? d.data(q, slot).asSlice(0, bytes).toArray(ValueLayout.JAVA_BYTE) : null;
    }

    private static byte[] readOk(BlkDriver d, int q, long sector, int bytes) throws InterruptedException {
        int[] status = new int[1];
        byte[] data = read(d, q, sector, bytes, status);
        assertEquals(BlkLayout.S_OK, status[0], "read of " + bytes + " bytes at sector " + sector);
        return data;
    }

    private static byte[] random(SplittableRandom r, int bytes) {
        byte[] b = new byte[bytes];
        r.nextBytes(b);
        return b;
    }

    private static long crc(byte[] b) {
        CRC32C c = new CRC32C();
        c.update(b);
        return c.getValue();
    }

    private static byte[] imageBytes(Path image, long offset, int bytes) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "r")) {
            byte[] b = new byte[bytes];
            f.seek(offset);
            f.readFully(b);
            return b;
        }
    }

    private static boolean has(BlkDriver d, int feature) {
        return (d.negotiatedFeatures() & BlkLayout.bit(feature)) != 0;
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void theConfigurationSpaceDescribesTheImage(Backend backend) throws Exception {
        try (Peer peer = start(backend, 2, false); BlkDriver d = connect(peer, 2)) {
            BlkConfig c = d.deviceConfig();
            assertEquals(SECTORS, c.capacity(), "capacity in 512-byte sectors");
            assertEquals(IMAGE_BYTES, d.capacityBytes());
            assertTrue(has(d, BlkLayout.F_MQ), "two queues need MQ");
            assertEquals(2, c.numQueues(), "num_queues");
            assertTrue(has(d, BlkLayout.F_BLK_SIZE), "BLK_SIZE offered");
            assertEquals(512, c.blkSize(), "blk_size");
            assertFalse(d.readOnly(), "exported writable");
            assertTrue(has(d, BlkLayout.F_FLUSH), "FLUSH offered");
            if (has(d, BlkLayout.F_SEG_MAX)) {
                assertTrue(c.segMax() >= 1, "seg_max " + c.segMax());
            }
            if (has(d, BlkLayout.F_DISCARD)) {
                assertTrue(c.maxDiscardSectors() > 0 && c.maxDiscardSeg() > 0, "max_discard_sectors and _seg");
            }
            if (has(d, BlkLayout.F_WRITE_ZEROES)) {
                assertTrue(c.maxWriteZeroesSectors() > 0 && c.maxWriteZeroesSeg() > 0, "max_write_zeroes_sectors and _seg");
                assertTrue(c.writeZeroesMayUnmap() <= 1, "write_zeroes_may_unmap " + c.writeZeroesMayUnmap());
            }
        }
    }

    /** Requests of every size from one sector to 64 KiB at scattered places, then read back, flushed, and in the file. */
    @ParameterizedTest
    @EnumSource(Backend.class)
    void whatIsWrittenIsReadBackIntactAndLandsInTheImage(Backend backend) throws Exception {
        SplittableRandom r = new SplittableRandom(backend.ordinal() + 17);
        try (Peer peer = start(backend, 1, false); BlkDriver d = connect(peer, 1)) {
            int[] sizes = {512, 1024, 4096, 4096 + 512, 65536};
            List<long[]> done = new ArrayList<>(); // sector, bytes, crc
            List<byte[]> written = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                int bytes = sizes[i % sizes.length];
                long sector = (long) i * (65536 / 512) * 2 + r.nextInt(64); // 128 KiB apart: no overlap
                byte[] data = random(r, bytes);
                assertEquals(BlkLayout.S_OK, write(d, 0, sector, data), "write " + i);
                done.add(new long[] {sector, bytes, crc(data)});
                written.add(data);
            }
            // the last sector of the device too
            byte[] tail = random(r, 512);
            assertEquals(BlkLayout.S_OK, write(d, 0, SECTORS - 1, tail));
            assertEquals(BlkLayout.S_OK, one(d, 0, slot -> d.flush(0, slot)), "flush");
            for (int i = 0; i < done.size(); i++) {
                long[] w = done.get(i);
                byte[] back = readOk(d, 0, w[0], (int) w[1]);
                assertEquals(w[2], crc(back), "read back of write " + i);
                assertArrayEquals(written.get(i), imageBytes(peer.image(), w[0] * 512, (int) w[1]), "image at write " + i);
            }
            assertArrayEquals(tail, readOk(d, 0, SECTORS - 1, 512));
            assertArrayEquals(tail, imageBytes(peer.image(), IMAGE_BYTES - 512, 512));
        }
    }

    /** The back-end serves one front-end after another: the second finds what the first wrote. */
    @ParameterizedTest
    @EnumSource(Backend.class)
    void aSecondFrontEndFindsWhatTheFirstWrote(Backend backend) throws Exception {
        byte[] data = random(new SplittableRandom(21), 65536);
        try (Peer peer = start(backend, 1, false)) {
            try (BlkDriver d = connect(peer, 1)) {
                assertEquals(BlkLayout.S_OK, write(d, 0, 1000, data));
            }
            try (BlkDriver d = connect(peer, 1)) {
                assertArrayEquals(data, readOk(d, 0, 1000, 65536));
                assertEquals(SECTORS, d.deviceConfig().capacity());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void writeZeroesReadsBackAsZerosAndDiscardAsZerosOrAsItWas(Backend backend) throws Exception {
        SplittableRandom r = new SplittableRandom(5);
        try (Peer peer = start(backend, 1, false); BlkDriver d = connect(peer, 1)) {
            assertTrue(has(d, BlkLayout.F_WRITE_ZEROES), "WRITE_ZEROES offered");
            assertTrue(has(d, BlkLayout.F_DISCARD), "DISCARD offered");
            byte[] zeros = new byte[16384];
            for (boolean unmap : new boolean[] {false, true}) {
                long sector = unmap ? 4096 : 2048;
                byte[] around = random(r, 65536);
                assertEquals(BlkLayout.S_OK, write(d, 0, sector, around));
                // 16 KiB in the middle; unmap is only a permission (write_zeroes_may_unmap), zeros either way
                assertEquals(BlkLayout.S_OK, one(d, 0, slot -> d.writeZeroes(0, slot, sector + 32, 32, unmap)),
                        "write zeroes, unmap " + unmap);
                byte[] back = readOk(d, 0, sector, 65536);
                assertArrayEquals(Arrays.copyOfRange(around, 0, 16384), Arrays.copyOfRange(back, 0, 16384), "before");
                assertArrayEquals(zeros, Arrays.copyOfRange(back, 16384, 32768), "zeroed, unmap " + unmap);
                assertArrayEquals(Arrays.copyOfRange(around, 32768, 65536), Arrays.copyOfRange(back, 32768, 65536), "after");
                assertArrayEquals(back, imageBytes(peer.image(), sector * 512, 65536), "image");
            }
            // DISCARD promises nothing about what is read afterwards: each sector is either as it was or zeros
            long sector = 6144;
            byte[] before = random(r, 65536);
            assertEquals(BlkLayout.S_OK, write(d, 0, sector, before));
            assertEquals(BlkLayout.S_OK, one(d, 0, slot -> d.discard(0, slot, sector, 128)), "discard");
            byte[] after = readOk(d, 0, sector, 65536);
            for (int s = 0; s < 128; s++) {
                byte[] was = Arrays.copyOfRange(before, s * 512, s * 512 + 512);
                byte[] is = Arrays.copyOfRange(after, s * 512, s * 512 + 512);
                assertTrue(Arrays.equals(was, is) || Arrays.equals(new byte[512], is), "discarded sector " + s);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void requestsPastTheEndFailWithIoErrAndChangeNothing(Backend backend) throws Exception {
        SplittableRandom r = new SplittableRandom(9);
        try (Peer peer = start(backend, 1, false); BlkDriver d = connect(peer, 1)) {
            byte[] last = random(r, 4096);
            assertEquals(BlkLayout.S_OK, write(d, 0, SECTORS - 8, last));
            int[] status = new int[1];
            assertEquals(null, read(d, 0, SECTORS, 512, status));
            assertEquals(BlkLayout.S_IOERR, status[0], "read at the capacity");
            read(d, 0, SECTORS - 4, 4096, status);
            assertEquals(BlkLayout.S_IOERR, status[0], "read across the end");
            read(d, 0, Long.MAX_VALUE / 512, 512, status);
            assertEquals(BlkLayout.S_IOERR, status[0], "read at a sector whose byte offset overflows");
            assertEquals(BlkLayout.S_IOERR, write(d, 0, SECTORS - 4, random(r, 4096)), "write across the end");
            assertEquals(BlkLayout.S_IOERR, write(d, 0, SECTORS, random(r, 512)), "write at the capacity");
            assertEquals(BlkLayout.S_IOERR, one(d, 0, slot -> d.writeZeroes(0, slot, SECTORS - 4, 8, false)),
                    "write zeroes across the end");
            assertArrayEquals(last, readOk(d, 0, SECTORS - 8, 4096), "the last 4 KiB are as written");
            assertEquals(IMAGE_BYTES, Files.size(peer.image()), "the image did not grow");
        }
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void getIdAnswersAnAsciiIdOfAtMostTwentyBytes(Backend backend) throws Exception {
        try (Peer peer = start(backend, 1, false); BlkDriver d = connect(peer, 1)) {
            int slot = d.acquire(0);
            d.data(0, slot).asSlice(0, BlkLayout.ID_BYTES).fill((byte) 0xFF);
            d.getId(0, slot);
            assertEquals(BlkLayout.S_OK, d.run(0, slot, TIMEOUT));
            byte[][] id = {d.data(0, slot).asSlice(0, BlkLayout.ID_BYTES).toArray(ValueLayout.JAVA_BYTE)};
            String text = new String(id[0], StandardCharsets.US_ASCII);
            int end = text.indexOf('\0') < 0 ? text.length() : text.indexOf('\0');
            assertTrue(end > 0, "an id: " + Arrays.toString(id[0]));
            assertTrue(text.substring(0, end).chars().allMatch(c -> c >= 0x20 && c < 0x7F), "printable: " + text);
            // not "NUL-padded" to 20 bytes: qemu-storage-daemon writes its id and one NUL and leaves the rest
        }
    }

    /**
     * Two queues, one thread each, each with all its slots in flight on its own region; then each region is read back
     * through the other queue.
     */
    @ParameterizedTest
    @EnumSource(Backend.class)
    void everyQueueServesRequestsAtTheSameTime(Backend backend) throws Exception {
        int queues = 2;
        try (Peer peer = start(backend, queues, false); BlkDriver d = connect(peer, queues)) {
            long[][] sums = new long[queues][];
            Thread[] threads = new Thread[queues];
            Throwable[] failures = new Throwable[queues];
            for (int q = 0; q < queues; q++) {
                int queue = q;
                threads[q] = Thread.ofPlatform().start(() -> {
                    try {
                        sums[queue] = fillRegion(d, queue, (long) queue * (4 << 20) / 512, new SplittableRandom(queue));
                    } catch (Throwable t) {
                        failures[queue] = t;
                    }
                });
            }
            for (int q = 0; q < queues; q++) {
                threads[q].join();
                if (failures[q] != null) {
                    throw new AssertionError("queue " + q, failures[q]);
                }
            }
            for (int q = 0; q < queues; q++) {
                int other = (q + 1) % queues;
                long base = (long) q * (4 << 20) / 512;
                for (int i = 0; i < sums[q].length; i++) {
                    assertEquals(sums[q][i], crc(readOk(d, other, base + i * 128L, 65536)),
                            "region of queue " + q + ", block " + i + ", read through queue " + other);
                }
            }
        }
    }

    /** Every slot of queue {@code q} writes 64 KiB of random data at once, from {@code base}; their CRCs. */
    private static long[] fillRegion(BlkDriver d, int q, long base, SplittableRandom r) throws InterruptedException {
        int depth = d.depth(q);
        long[] sums = new long[depth];
        for (int i = 0; i < depth; i++) {
            int slot = d.acquire(q);
            byte[] data = random(r, 65536);
            sums[i] = crc(data);
            d.data(q, slot).copyFrom(MemorySegment.ofArray(data));
            d.write(q, slot, base + i * 128L, data.length);
        }
        d.kick(q);
        int[] left = {depth};
        while (left[0] > 0) {
            int n = d.complete(q, (slot, status, used) -> {
                assertEquals(BlkLayout.S_OK, status, "write on queue " + q);
                left[0]--;
            });
            if (n == 0 && !d.await(q, TIMEOUT.toNanos())) {
                fail("queue " + q + ": " + left[0] + " writes not completed within " + TIMEOUT);
            }
        }
        return sums;
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aReadOnlyExportRefusesWritesWithIoErr(Backend backend) throws Exception {
        byte[] original = new byte[4096];
        new SplittableRandom(3).nextBytes(original);
        Path image = dir.resolve("disk.img");
        try (Peer peer = start(backend, 1, true)) {
            try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
                f.seek(8192);
                f.write(original);
            }
            try (BlkDriver d = connect(peer, 1)) {
                assertTrue(d.readOnly(), "VIRTIO_BLK_F_RO negotiated");
                assertArrayEquals(original, readOk(d, 0, 16, 4096), "reads work");
                // the driver refuses to write to a read-only device: the request is built by hand, as a guest
                // that ignores RO would
                assertEquals(BlkLayout.S_IOERR, rawWrite(d, 16, 4096), "write");
                assertArrayEquals(original, readOk(d, 0, 16, 4096), "unchanged");
            }
            PeerRuns.Outcome r = driveBlk(peer, "--rw", "randwrite", "--duration", "1");
            assertEquals(DriveBlk.EXIT_IO_ERROR, r.exit(), r.output());
            assertTrue(r.output().contains("the device is read-only (VIRTIO_BLK_F_RO): --rw randwrite writes"), r.output());
            assertArrayEquals(original, imageBytes(image, 8192, 4096), "the image is unchanged");
        }
    }

    /**
     * A write the driver would refuse: header at the start of slot 0's data buffer, {@code bytes} of zeros after 512,
     * the status where the driver keeps it.
     */
    private static int rawWrite(BlkDriver d, long sector, int bytes) throws InterruptedException {
        int slot = d.acquire(0);
        MemorySegment data = d.data(0, slot);
        data.asSlice(0, 512 + bytes).fill((byte) 0);
        data.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), BlkLayout.HEADER_TYPE, BlkLayout.T_OUT);
        data.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), BlkLayout.HEADER_SECTOR, sector);
        long gpa = d.dataAddress(0, slot);
        d.addChain(0, slot, new ScatterGather(4).readable(gpa, BlkLayout.HEADER_BYTES).readable(gpa + 512, bytes)
                .writable(d.statusAddress(0, slot), BlkLayout.STATUS_BYTES));
        return d.run(0, slot, TIMEOUT);
    }

    /**
     * {@code drive blk --verify} against the back-end: a random read/write mix over two queues, every read checked
     * against the last write of its block; serve blk counts exactly the requests drive blk made.
     */
    @ParameterizedTest
    @EnumSource(Backend.class)
    void driveBlkVerifiesEveryBlockItReads(Backend backend) throws Exception {
        try (Peer peer = start(backend, 2, false)) {
            Path json = dir.resolve("result.json");
            PeerRuns.Outcome r = driveBlk(peer, "--rw", "randrw", "--bs", "4k", "--iodepth", "16", "--queues", "2",
                    "--duration", "2", "--verify", "--json", json.toString());
            assertEquals(0, r.exit(), r.output());
            String result = r.output().lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow();
            assertTrue(result.contains(" io-errors=0 verify-errors=0 "), result);
            long requests = field(result, "requests");
            String written = Files.readString(json);
            assertTrue(written.contains("\"requests\": " + requests + ",") && written.contains("\"verify_errors\": 0,")
                    && written.contains("\"read_clat_p999_us\": "), written);
            assertTrue(requests > 100 && field(result, "read-requests") > 0 && field(result, "write-requests") > 0, result);
            // randwrite --verify: one pass of random writes (some blocks twice, some never), then every block written
            // read back once and checked against its last write
            PeerRuns.Outcome w = driveBlk(peer, "--rw", "randwrite", "--bs", "8k", "--size", "1m", "--verify");
            assertEquals(0, w.exit(), w.output());
            String wr = w.output().lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow();
            assertTrue(wr.contains(" io-errors=0 verify-errors=0 "), wr);
            assertEquals(128, field(wr, "write-requests"), wr);
            assertTrue(field(wr, "read-requests") > 0 && field(wr, "read-requests") <= 128, wr);
            requests += field(wr, "requests");
            String log = peer.stop();
            if (backend.ours) {
                String served = log.lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow(() ->
                        new AssertionError("serve blk printed no RESULT line:\n" + log));
                assertEquals(requests, field(served, "requests"), served);
                assertEquals(0, field(served, "io-errors"), served);
            }
        }
    }

    /** drive blk exits 3 and says so when blocks it reads are not what a --verify run wrote: here, never written. */
    @ParameterizedTest
    @EnumSource(Backend.class)
    void driveBlkExitsThreeOnBlocksThatDoNotVerify(Backend backend) throws Exception {
        try (Peer peer = start(backend, 1, false)) {
            PeerRuns.Outcome r = driveBlk(peer, "--rw", "read", "--bs", "4k", "--size", "64k", "--verify");
            assertEquals(DriveBlk.EXIT_VERIFY_ERROR, r.exit(), r.output());
            assertTrue(r.output().contains("16 blocks read back were not what was written (verify)"), r.output());
            assertTrue(r.output().contains(" io-errors=0 verify-errors=16 "), r.output());
        }
    }

    /** drive blk asks for more queues than the back-end has: refused at connection, naming the flag. */
    @ParameterizedTest
    @EnumSource(Backend.class)
    void driveBlkNamesTheFlagTheBackEndCannotServe(Backend backend) throws Exception {
        try (Peer peer = start(backend, 1, false)) {
            PeerRuns.Outcome r = driveBlk(peer, "--queues", "2", "--duration", "1");
            assertEquals(2, r.exit(), r.output());
            assertTrue(r.output().contains("--bs 4096, --queues 2: the back-end cannot take them: "), r.output());
        }
    }

    /**
     * A back-end that stops answering (SIGSTOP) while drive blk has requests in flight: drive blk ends with an I/O
     * error naming the stall rather than waiting for ever.
     */
    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"QEMU_STORAGE_DAEMON", "SERVE_BLK"})
    void driveBlkEndsWithAnIoErrorWhenTheBackEndStopsAnswering(Backend backend) throws Exception {
        try (Peer peer = start(backend, 1, false)) {
            List<String> argv = new ArrayList<>(List.of(PeerRuns.cli().split(" ")));
            argv.addAll(List.of("drive", "blk", "--socket", peer.socket().toString(), "--rw", "randread",
                    "--duration", "600", "--stall-timeout", "2"));
            Path out = dir.resolve("drive.log");
            Process drive = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            try {
                // running: its first progress line is out
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!Files.readString(out).contains("drive blk: [") && System.nanoTime() < until && drive.isAlive()) {
                    Thread.sleep(50);
                }
                assertTrue(Files.readString(out).contains("drive blk: ["), Files.readString(out));
                signal("STOP", peer.process().pid());
                assertTrue(drive.waitFor(60, TimeUnit.SECONDS), "drive blk still waits:\n" + Files.readString(out));
                String log = Files.readString(out);
                assertEquals(DriveBlk.EXIT_IO_ERROR, drive.exitValue(), log);
                assertTrue(log.contains("requests in flight and none completed within 2000 ms (--stall-timeout)"), log);
            } finally {
                drive.destroyForcibly();
                signal("CONT", peer.process().pid());
            }
        }
    }

    private static void signal(String name, long pid) throws IOException, InterruptedException {
        assertEquals(0, new ProcessBuilder("kill", "-" + name, Long.toString(pid)).start().waitFor(), "kill -" + name);
    }

    private static PeerRuns.Outcome driveBlk(Peer peer, String... options) throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(List.of(PeerRuns.cli().split(" ")));
        argv.addAll(List.of("drive", "blk", "--socket", peer.socket().toString(), "--ring",
                peer.ring().name().toLowerCase(java.util.Locale.ROOT)));
        argv.addAll(List.of(options));
        return PeerRuns.run(Duration.ofMinutes(2), argv);
    }
}
