package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.driver.BlkDriver.Completion;
import io.virtio4j.devices.blk.BlkDevice;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.NegotiationFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.zip.CRC32;

import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BlkDriver} against the real virtio-blk device ({@link BlkDevice}, sync engine) over a file in a temporary
 * directory, served in process: every ring format and descriptor layout moves data intact (checksums, the file's
 * bytes compared), requests longer than the device's SIZE_MAX are cut into SIZE_MAX pieces and a request size its
 * SEG_MAX cannot carry is refused at connect, FLUSH, GET_ID, WRITE_ZEROES, DISCARD and a read past the end answer
 * as the spec says, requests queued while the back-end is away are served after reconnect, and misuse of the API is
 * refused. What the real device never does (a status byte outside the spec, or none) is played by
 * {@link StatusForgingBlkDevice}, and a back-end dying with completions out of order by
 * {@link SecondOfThreeCompletingBlkDevice}.
 */
class BlkDriverTest {
    private static final long DISK = 4L << 20;
    private static final String ID = "blk-driver-test";
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final long WAIT_NANOS = 20_000_000_000L;

    @TempDir
    Path dir;

    /** A zero-filled file of {@code bytes} in the test's directory. */
    private Path file(long bytes) throws IOException {
        Path f = dir.resolve("disk-" + bytes + ".img");
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.setLength(bytes);
        }
        return f;
    }

    /** The real device over {@code store}: {@code queues} queues, sync engine, GET_ID answers {@link #ID}. */
    private static BlkDevice device(BlockStore store, int queues) {
        return new BlkDevice(store, new BlkDevice.Options(queues, BlockEngine.SYNC, 16, 64, new int[0], ID,
                NotificationMode.NOTIFY, 20_000));
    }

    /** Runs {@code test} with a driver of {@code config} on {@code device}, served in process; closes the device. */
    private static void withDriver(VirtioDevice device, BlkDriver.Config config, Consumer<BlkDriver> test)
            throws InterruptedException {
        InProcessBackend.Connected c = InProcessBackend.start(device, "blk");
        try (BlkDriver d = BlkDriver.start(FrontendSession.over(c.frontend()), config)) {
            test.accept(d);
        } finally {
            c.backend().awaitEnd();
            device.reset();
        }
    }

    /** {@code bytes} of the file at {@code offset}, as the device left them (read through the page cache). */
    private static byte[] fileBytes(Path f, long offset, int bytes) {
        ByteBuffer b = ByteBuffer.allocate(bytes);
        try (FileChannel ch = FileChannel.open(f)) {
            while (b.hasRemaining()) {
                if (ch.read(b, offset + b.position()) < 0) {
                    throw new AssertionError("the file ends before " + (offset + bytes));
                }
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return b.array();
    }

    private static long fileCrc(Path f, long offset, int bytes) {
        CRC32 c = new CRC32();
        c.update(fileBytes(f, offset, bytes));
        return c.getValue();
    }

    private static int status(BlkDriver d, int q, int slot) {
        try {
            return d.run(q, slot, TIMEOUT);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * A polling queue never asks for kicks, with or without EVENT_IDX: a started ring's flags ask for them and a
     * thread that never sleeps would never take that back, so a driver without EVENT_IDX made an eventfd write per
     * request. 500 writes one at a time, each checked on the file: at most the one kick that may precede the
     * attach.
     */
    @ParameterizedTest
    @CsvSource({"SPLIT, false", "SPLIT, true", "PACKED, false", "PACKED, true"})
    void aPollingQueueLeavesTheDriverNoReasonToKick(RingFormat format, boolean eventIdx) throws Exception {
        Path f = file(DISK);
        try (BlockStore store = BlockStore.open(f.toString(), false, 512)) {
            BlkDevice polling = new BlkDevice(store, new BlkDevice.Options(1, BlockEngine.SYNC, 16, 64, new int[0], ID,
                    NotificationMode.POLL, 20_000));
            BlkDriver.Config config = BlkDriver.Config.defaults().withQueueSize(32).withFormat(format)
                    .withEventIdx(eventIdx);
            withDriver(polling, config, d -> {
                SplittableRandom random = new SplittableRandom(eventIdx ? 1 : 2);
                for (int i = 0; i < 500; i++) {
                    int slot = d.acquire(0);
                    MemorySegment data = d.data(0, slot);
                    for (int b = 0; b < 512; b++) {
                        data.set(ValueLayout.JAVA_BYTE, b, (byte) random.nextInt());
                    }
                    CRC32 crc = new CRC32();
                    crc.update(data.asSlice(0, 512).asByteBuffer());
                    d.write(0, slot, i, 512);
                    assertEquals(0, status(d, 0, slot), "write " + i);
                    assertEquals(crc.getValue(), fileCrc(f, i * 512L, 512), "sector " + i + " on the file");
                }
                long kicks = d.session().ring(0).queue().counters().kicksSent;
                assertTrue(kicks <= 1, "the driver kicked the polling queue " + kicks + " times for 500 requests");
            });
        }
    }

    /**
     * Every slot written at once with random data and lengths, then read back into other slots: what was read
     * matches what was written (checksums), and the file holds it too. Without indirect descriptors the depth is
     * cut to what the 32-entry ring holds (3 descriptors a request).
     */
    @ParameterizedTest
    @CsvSource({"SPLIT, true, true", "SPLIT, false, true", "SPLIT, true, false", "PACKED, true, true",
            "PACKED, false, false"})
    void dataWrittenIsReadBackIntact(RingFormat format, boolean indirect, boolean eventFds) throws Exception {
        Path f = file(DISK);
        try (BlockStore store = BlockStore.open(f.toString(), false, 512)) {
            BlkDriver.Config config = BlkDriver.Config.defaults().withQueues(2).withQueueSize(32).withDepth(16)
                    .withMaxRequestBytes(16384).withFormat(format).withIndirect(indirect).withEventFds(eventFds);
            withDriver(device(store, 2), config, d -> {
                assertEquals(1, d.maxSegments(), "16 KiB is less than SIZE_MAX: one data element");
                SplittableRandom random = new SplittableRandom(format.ordinal() * 4 + (indirect ? 2 : 0) + (eventFds ? 1 : 0));
                for (int q = 0; q < 2; q++) {
                    int depth = d.depth(q);
                    assertEquals(indirect ? 16 : 32 / 3, depth, "depth");
                    long[] sums = new long[depth];
                    int[] bytes = new int[depth];
                    long[] sectors = new long[depth];
                    for (int i = 0; i < depth; i++) {
                        int slot = d.acquire(q);
                        bytes[i] = BlkLayout.SECTOR * (1 + random.nextInt(32));
                        sectors[i] = ((long) q * (1 << 20) + (long) i * 16384) / BlkLayout.SECTOR;
                        MemorySegment data = d.data(q, slot);
                        for (int b = 0; b < bytes[i]; b += 8) {
                            data.set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
                        }
                        sums[i] = crc(data, 0, bytes[i]);
                        d.write(q, slot, sectors[i], bytes[i]);
                    }
                    d.kick(q);
                    reap(d, q, depth, BlkLayout.S_OK);
                    int[] slots = new int[depth];
                    for (int i = 0; i < depth; i++) {
                        slots[i] = d.acquire(q);
                        d.data(q, slots[i]).fill((byte) 0);
                    }
                    for (int i = 0; i < depth; i++) {
                        d.read(q, slots[(i + 3) % depth], sectors[i], bytes[i]);
                    }
                    d.kick(q);
                    reap(d, q, depth, BlkLayout.S_OK);
                    for (int i = 0; i < depth; i++) {
                        assertEquals(sums[i], crc(d.data(q, slots[(i + 3) % depth]), 0, bytes[i]), "read back, range " + i);
                        assertEquals(sums[i], fileCrc(f, sectors[i] * BlkLayout.SECTOR, bytes[i]), "in the file, range " + i);
                    }
                    assertEquals(0, d.inFlight(q));
                }
            });
        }
    }

    /** Reaps {@code n} completions, each with {@code expected} status. */
    private static void reap(BlkDriver d, int q, int n, int expected) {
        int[] got = {0};
        try {
            while (got[0] < n) {
                if (d.complete(q, (slot, status, used) -> {
                    assertEquals(expected, status, "slot " + slot);
                    got[0]++;
                }) == 0 && !d.await(q, WAIT_NANOS)) {
                    throw new AssertionError("no completion within " + WAIT_NANOS / 1_000_000 + " ms");
                }
            }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Requests longer than the device's SIZE_MAX (1 MiB) go out as SIZE_MAX pieces: 2 MiB + 4 KiB takes three data
     * descriptors, which the descriptor table shows (split, direct: each request's descriptors stay in the table),
     * none longer than SIZE_MAX; written and read back through the device, the data is intact, in the file too.
     */
    @ParameterizedTest
    @CsvSource({"SPLIT, false", "SPLIT, true", "PACKED, false"})
    void requestsLongerThanSizeMaxGoOutInSizeMaxPieces(RingFormat format, boolean indirect) throws Exception {
        int big = 2 * BlkDevice.SIZE_MAX + 4096;
        Path f = file(8L << 20);
        try (BlockStore store = BlockStore.open(f.toString(), false, 512)) {
            BlkDriver.Config config = BlkDriver.Config.defaults().withDepth(2).withQueueSize(16)
                    .withMaxRequestBytes(big).withFormat(format).withIndirect(indirect);
            withDriver(device(store, 1), config, d -> {
                assertEquals(3, d.maxSegments());
                SplittableRandom random = new SplittableRandom(big);
                int slot = d.acquire(0);
                MemorySegment data = d.data(0, slot);
                for (int b = 0; b < big; b += 8) {
                    data.set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
                }
                long sum = crc(data, 0, big);
                d.write(0, slot, 2048, big);
                if (format == RingFormat.SPLIT && !indirect) {
                    SplitRingAreas areas = (SplitRingAreas) d.session().ring(0).areas();
                    long[] lengths = new long[areas.queueSize()];
                    int used = 0;
                    for (int i = 0; i < lengths.length; i++) {
                        lengths[i] = Descriptors.len(areas.descTable(), 0, i);
                        used += lengths[i] != 0 ? 1 : 0;
                        assertTrue(lengths[i] <= BlkDevice.SIZE_MAX, "descriptor " + i + " of " + lengths[i] + " bytes");
                    }
                    assertEquals(5, used, "header, 3 data pieces, status: " + Arrays.toString(lengths));
                }
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
                int other = d.acquire(0);
                d.data(0, other).fill((byte) 0);
                d.read(0, other, 2048, big);
                assertEquals(BlkLayout.S_OK, status(d, 0, other));
                assertEquals(sum, crc(d.data(0, other), 0, big), "read back");
                assertEquals(sum, fileCrc(f, 2048L * BlkLayout.SECTOR, big), "in the file");
            });
        }
    }

    @Test
    void flushGetIdDiscardAndWriteZeroes() throws Exception {
        Path f = file(DISK);
        try (BlockStore store = BlockStore.open(f.toString(), false, 512)) {
            withDriver(device(store, 1), BlkDriver.Config.defaults().withMaxRequestBytes(8192), d -> {
                assertEquals(DISK, d.capacityBytes());
                int slot = d.acquire(0);
                d.flush(0, slot);
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
                slot = d.acquire(0);
                d.getId(0, slot);
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
                String id = new String(d.data(0, slot).asSlice(0, BlkLayout.ID_BYTES).toArray(ValueLayout.JAVA_BYTE),
                        StandardCharsets.US_ASCII).replace("\0", "");
                assertEquals(ID, id);
                slot = d.acquire(0);
                d.data(0, slot).asSlice(0, 8192).fill((byte) 0x5A);
                d.write(0, slot, 10, 8192);
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
                slot = d.acquire(0);
                d.writeZeroes(0, slot, 12, 4, true);
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
                slot = d.acquire(0);
                d.writeZeroes(0, slot, 20, 2, false);
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
                byte[] onDisk = fileBytes(f, 10 * 512, 8192);
                for (int b = 0; b < 8192; b++) {
                    boolean zeroed = b >= 1024 && b < 3072 || b >= 5120 && b < 6144;
                    assertEquals(zeroed ? 0 : (byte) 0x5A, onDisk[b], "byte " + b);
                }
                slot = d.acquire(0);
                d.discard(0, slot, 0, 8);
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
                slot = d.acquire(0);
                d.read(0, slot, DISK / BlkLayout.SECTOR - 1, 1024); // past the end
                assertEquals(BlkLayout.S_IOERR, status(d, 0, slot));
            });
        }
    }

    /** A status byte of 7, or none written: a named error for that slot, which is free again; the queue goes on. */
    @ParameterizedTest
    @CsvSource({"7", "256"})
    void aStatusOutsideTheSpecIsNamed(int forced) throws Exception {
        StatusForgingBlkDevice device = new StatusForgingBlkDevice();
        withDriver(device, BlkDriver.Config.defaults().withDepth(4), d -> {
            device.status = forced;
            int slot = d.acquire(0);
            d.flush(0, slot);
            BadCompletionException e = assertThrows(BadCompletionException.class, () -> d.run(0, slot, TIMEOUT));
            assertEquals(slot, e.slot());
            assertTrue(e.getMessage().contains(forced == 7 ? "status 7" : "status 255"), e.getMessage());
            if (forced != 7) {
                assertTrue(e.getMessage().contains("did not write"), e.getMessage());
            }
            assertEquals(0, d.inFlight(0));
            device.status = BlkLayout.S_OK;
            int[] all = new int[4];
            for (int i = 0; i < 4; i++) {
                all[i] = d.acquire(0);
                assertTrue(all[i] >= 0, "every slot is free again");
            }
            for (int i = 1; i < 4; i++) {
                d.release(0, all[i]);
            }
            d.flush(0, all[0]);
            assertEquals(BlkLayout.S_OK, status(d, 0, all[0]));
        });
    }

    /**
     * The back-end goes away with requests queued that it never saw; after {@link BlkDriver#reconnect} the next
     * connection serves them (each ring resumes at its used index) and every slot completes once, data intact in
     * the file. Then the same through a listening driver, which the back-end connects to.
     */
    @ParameterizedTest
    @CsvSource({"false", "true"})
    void requestsQueuedWhileTheBackendIsAwayAreServedAfterReconnect(boolean listening) throws Exception {
        Path f = file(DISK);
        Path path = dir.resolve("blk.sock");
        try (BlockStore store = BlockStore.open(f.toString(), false, 512); BlkDevice device = device(store, 1)) {
            VhostUserBackendEndpoint endpoint = new VhostUserBackendEndpoint(
                    () -> new VhostUserSession(device, BackendOptions.defaults()));
            Thread server = BackendThread.start(endpoint, path, listening);
            BlkDriver.Config config = BlkDriver.Config.defaults().withDepth(8).withMaxRequestBytes(4096);
            try (BlkDriver d = listening ? BlkDriver.listen(path, config, TIMEOUT) : BlkDriver.connect(path, config, TIMEOUT)) {
                int slot = d.acquire(0);
                d.data(0, slot).asSlice(0, 4096).fill((byte) 1);
                d.write(0, slot, 0, 4096);
                assertEquals(BlkLayout.S_OK, d.run(0, slot, TIMEOUT));
                d.session().disconnect();
                long deadline = System.nanoTime() + WAIT_NANOS;
                while (device.workerThreadId(0) != -1) { // the back-end resets the device once it sees the close
                    assertTrue(System.nanoTime() - deadline < 0, "the back-end did not stop its queue");
                    Thread.sleep(1);
                }
                long[] sums = new long[8];
                for (int i = 0; i < 8; i++) {
                    int s = d.acquire(0);
                    assertEquals(i, s, "slots come in order from a full stack");
                    MemorySegment data = d.data(0, s);
                    data.asSlice(0, 4096).fill((byte) (i + 10));
                    sums[i] = crc(data, 0, 4096);
                    d.write(0, s, 8L * (i + 1), 4096);
                }
                d.kick(0); // nobody listens
                d.reconnect(TIMEOUT);
                int[] seen = new int[8];
                int done = 0;
                while (done < 8) {
                    int n = d.complete(0, (s, status, used) -> {
                        assertEquals(BlkLayout.S_OK, status);
                        seen[s]++;
                    });
                    done += n;
                    if (n == 0) {
                        assertTrue(d.await(0, WAIT_NANOS), "completions after reconnect");
                    }
                }
                for (int i = 0; i < 8; i++) {
                    assertEquals(1, seen[i], "slot " + i + " completed once");
                    assertEquals(sums[i], fileCrc(f, 4096L * (i + 1), 4096), "range " + i + " in the file");
                }
            } finally {
                endpoint.close();
                server.join(TIMEOUT.toMillis());
            }
        }
    }

    /**
     * The back-end takes three writes (A, B, C), completes only the second and dies; D is queued while it is away
     * and takes B's slot and ring head. After {@link BlkDriver#reconnect} the next connection gets A, C and D once
     * each (resuming at the used index alone would offer D twice and A never): every request completes exactly
     * once, and what the disk holds matches the checksums, D's data where B's was.
     */
    @Test
    void requestsInFlightWhenTheBackendDiesCompleteOnceAfterReconnect() throws Exception {
        SecondOfThreeCompletingBlkDevice device = new SecondOfThreeCompletingBlkDevice();
        Path path = dir.resolve("dying.sock");
        VhostUserBackendEndpoint endpoint = new VhostUserBackendEndpoint(
                () -> new VhostUserSession(device, BackendOptions.defaults()));
        Thread server = BackendThread.start(endpoint, path, false);
        BlkDriver.Config config = BlkDriver.Config.defaults().withDepth(8).withMaxRequestBytes(4096);
        try (BlkDriver d = BlkDriver.connect(path, config, TIMEOUT)) {
            SplittableRandom random = new SplittableRandom(3);
            int[] request = new int[8]; // the request (0 A, 1 B, 2 C, 3 D) each slot carries
            long[] sums = new long[4];
            long[] sectors = {8, 16, 24, 16};
            for (int r = 0; r < 3; r++) {
                queueWrite(d, request, sums, sectors, r, random);
            }
            d.kick(0);
            int[] done = new int[4];
            Completion count = (slot, status, used) -> {
                assertEquals(BlkLayout.S_OK, status, "request " + request[slot]);
                done[request[slot]]++;
            };
            while (done[1] == 0) {
                if (d.complete(0, count) == 0) {
                    assertTrue(d.await(0, WAIT_NANOS), "B completes");
                }
            }
            assertEquals(2, d.inFlight(0), "A and C stay with the dying back-end");
            d.session().disconnect();
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (device.resets == 0) { // the back-end is gone for good: it no longer touches the ring
                assertTrue(System.nanoTime() - deadline < 0, "the back-end did not end the connection");
                Thread.sleep(1);
            }
            queueWrite(d, request, sums, sectors, 3, random);
            d.kick(0); // nobody listens
            d.reconnect(TIMEOUT);
            while (done[0] + done[2] + done[3] < 3) {
                if (d.complete(0, count) == 0) {
                    assertTrue(d.await(0, WAIT_NANOS), "completions after reconnect: " + Arrays.toString(done));
                }
            }
            assertEquals(0, d.inFlight(0));
            assertEquals(0, d.complete(0, count), "nothing completes twice");
            assertEquals("[1, 1, 1, 1]", Arrays.toString(done), "each request completed once");
            for (int r : new int[] {0, 2, 3}) {
                assertEquals(sums[r], crc(device.disk, sectors[r] * BlkLayout.SECTOR, 4096), "request " + r + " on disk");
                int slot = d.acquire(0);
                d.data(0, slot).fill((byte) 0);
                d.read(0, slot, sectors[r], 4096);
                assertEquals(BlkLayout.S_OK, d.run(0, slot, TIMEOUT));
                assertEquals(sums[r], crc(d.data(0, slot), 0, 4096), "request " + r + " read back");
            }
        } finally {
            endpoint.close();
            server.join(TIMEOUT.toMillis());
        }
    }

    /** Queues request {@code r}: a write of 4 KiB of random bytes to {@code sectors[r]}, its checksum kept. */
    private static void queueWrite(BlkDriver d, int[] request, long[] sums, long[] sectors, int r,
                                   SplittableRandom random) {
        int slot = d.acquire(0);
        request[slot] = r;
        MemorySegment data = d.data(0, slot);
        for (int b = 0; b < 4096; b += 8) {
            data.set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
        }
        sums[r] = crc(data, 0, 4096);
        d.write(0, slot, sectors[r], 4096);
    }

    /** SEG_MAX (126) pieces of SIZE_MAX (1 MiB) cannot carry a request one SIZE_MAX longer: refused at connect. */
    @Test
    void requestsLargerThanSegMaxAllowsAreRefusedAtConnect() throws Exception {
        try (BlockStore store = BlockStore.open(file(DISK).toString(), false, 512)) {
            BlkDriver.Config config = BlkDriver.Config.defaults()
                    .withMaxRequestBytes((BlkDevice.SEG_MAX + 1) * BlkDevice.SIZE_MAX);
            NegotiationFailedException e = assertThrows(NegotiationFailedException.class,
                    () -> withDriver(device(store, 1), config, d -> { }));
            assertTrue(e.getMessage().contains("SEG_MAX is " + BlkDevice.SEG_MAX), e.getMessage());
        }
    }

    /**
     * 15 MiB requests in SIZE_MAX (1 MiB) pieces take 17 descriptors, more than a 16-entry queue: refused at connect
     * with indirect descriptors too (the spec bounds a chain by the queue size either way), naming SIZE_MAX, SEG_MAX
     * and the queue size; 14 MiB (16 descriptors) is fine.
     */
    @ParameterizedTest
    @CsvSource({"true", "false"})
    void aChainLongerThanTheQueueIsRefusedAtConnect(boolean indirect) throws Exception {
        try (BlockStore store = BlockStore.open(file(DISK).toString(), false, 512)) {
            BlkDriver.Config config = BlkDriver.Config.defaults().withDepth(1).withQueueSize(16).withIndirect(indirect)
                    .withMaxRequestBytes(15 * BlkDevice.SIZE_MAX);
            NegotiationFailedException e = assertThrows(NegotiationFailedException.class,
                    () -> withDriver(device(store, 1), config, d -> { }));
            for (String named : new String[] {"17 descriptors", "SIZE_MAX " + BlkDevice.SIZE_MAX,
                    "SEG_MAX " + BlkDevice.SEG_MAX, "queue size 16"}) {
                assertTrue(e.getMessage().contains(named), e.getMessage());
            }
            withDriver(device(store, 1), config.withMaxRequestBytes(14 * BlkDevice.SIZE_MAX),
                    d -> assertEquals(14, d.maxSegments()));
        }
    }

    /**
     * A device of 4 KiB logical blocks (BLK_SIZE 4096): reads and writes of part of a block, or not at a block
     * boundary, are refused before anything is queued; whole blocks go through.
     */
    @Test
    void readsAndWritesAreInWholeBlocksOfBlkSize() throws Exception {
        try (BlockStore store = BlockStore.open(file(DISK).toString(), false, 4096)) {
            withDriver(device(store, 1), BlkDriver.Config.defaults().withDepth(2).withMaxRequestBytes(8192), d -> {
                assertEquals(4096, d.blockSize());
                int slot = d.acquire(0);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.read(0, slot, 0, 512));
                assertTrue(e.getMessage().contains("block size 4096"), e.getMessage());
                assertThrows(IllegalArgumentException.class, () -> d.write(0, slot, 0, 4096 + 512), "part of a block");
                e = assertThrows(IllegalArgumentException.class, () -> d.write(0, slot, 1, 4096));
                assertTrue(e.getMessage().contains("sector 1"), e.getMessage());
                assertThrows(IllegalArgumentException.class, () -> d.read(0, slot, 12, 4096), "not a block boundary");
                assertEquals(0, d.inFlight(0));
                d.data(0, slot).fill((byte) 0x33);
                d.write(0, slot, 8, 8192);
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
            });
        }
    }

    @Test
    void misuseIsRefused() throws Exception {
        try (BlockStore store = BlockStore.open(file(DISK).toString(), true, 512)) {
            withDriver(device(store, 1), BlkDriver.Config.defaults().withDepth(2), d -> {
                assertTrue(d.readOnly());
                assertThrows(IllegalStateException.class, () -> d.read(0, 0, 0, 512), "not acquired");
                int slot = d.acquire(0);
                assertThrows(IllegalArgumentException.class, () -> d.read(0, slot, 0, 100), "not whole sectors");
                assertThrows(IllegalArgumentException.class, () -> d.read(0, slot, -1, 512), "negative sector");
                assertThrows(IllegalArgumentException.class, () -> d.read(0, slot, 0, 0), "empty");
                assertThrows(IllegalArgumentException.class,
                        () -> d.read(0, slot, 0, d.config().maxRequestBytes() + BlkLayout.SECTOR), "too long");
                assertThrows(IllegalStateException.class, () -> d.write(0, slot, 0, 512), "read-only");
                assertThrows(IllegalStateException.class, () -> d.writeZeroes(0, slot, 0, 1, false), "read-only");
                assertThrows(IllegalStateException.class, () -> d.discard(0, slot, 0, 1),
                        "DISCARD is not offered by a read-only device");
                d.read(0, slot, 0, 512);
                assertThrows(IllegalStateException.class, () -> d.read(0, slot, 0, 512), "in flight");
                assertThrows(IllegalStateException.class, () -> d.run(0, 1 - slot, TIMEOUT), "not in flight");
                assertEquals(BlkLayout.S_OK, status(d, 0, slot));
            });
        }
    }

    /** Segment requests of more sectors than a segment's 32-bit count holds are refused before anything is queued. */
    @Test
    void aSegmentOfMoreThan32BitsOfSectorsIsRefused() throws Exception {
        try (BlockStore store = BlockStore.open(file(DISK).toString(), false, 512)) {
            withDriver(device(store, 1), BlkDriver.Config.defaults().withDepth(2), d -> {
                int slot = d.acquire(0);
                assertThrows(IllegalArgumentException.class, () -> d.discard(0, slot, 0, 1L << 32), "too many sectors");
                assertThrows(IllegalArgumentException.class, () -> d.writeZeroes(0, slot, 0, 0, false), "no sectors");
                assertThrows(IllegalArgumentException.class, () -> d.discard(0, slot, -1, 1), "negative sector");
                assertEquals(0, d.inFlight(0));
                d.release(0, slot);
            });
        }
    }
}
