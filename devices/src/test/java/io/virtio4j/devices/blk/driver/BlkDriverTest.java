package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.NegotiationFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BlkDriver} against a RAM-disk virtio-blk device served in process ({@link RamBlkDevice}): every ring
 * format and descriptor layout moves data intact (checksums, disk compared), requests keep to the device's SIZE_MAX
 * and SEG_MAX, a device's status byte outside the spec (or none) is a named error that gives the slot back, and
 * misuse of the API is refused.
 */
class BlkDriverTest {
    private static final long DISK = 4L << 20;
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final long WAIT_NANOS = 20_000_000_000L;

    /** Runs {@code test} with a driver of {@code config} on a fresh device. */
    private static void withDriver(RamBlkDevice device, BlkDriver.Config config, Consumer<BlkDriver> test)
            throws InterruptedException {
        InProcessBackend.Connected c = InProcessBackend.start(device, "ram-blk");
        try (BlkDriver d = BlkDriver.start(FrontendSession.over(c.frontend()), config)) {
            test.accept(d);
        } finally {
            c.backend().awaitEnd();
            device.close();
        }
    }

    private static long crc(MemorySegment s, long offset, long bytes) {
        CRC32 c = new CRC32();
        c.update(s.asSlice(offset, bytes).asByteBuffer());
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
     * Every slot written at once with random data and lengths, then read back into other slots: what was read
     * matches what was written (checksums), and the device's disk holds it too; no element longer than SIZE_MAX,
     * no request with more data elements than SEG_MAX.
     */
    @ParameterizedTest
    @CsvSource({"SPLIT, true, true", "SPLIT, false, true", "SPLIT, true, false", "PACKED, true, true",
            "PACKED, false, false"})
    void dataWrittenIsReadBackIntact(RingFormat format, boolean indirect, boolean eventFds) throws Exception {
        RamBlkDevice device = new RamBlkDevice(2, DISK, 4096, 4, false);
        BlkDriver.Config config = BlkDriver.Config.defaults().withQueues(2).withQueueSize(64).withDepth(16)
                .withMaxRequestBytes(16384).withFormat(format).withIndirect(indirect).withEventFds(eventFds);
        withDriver(device, config, d -> {
            assertEquals(4, d.maxSegments(), "16 KiB in 4 KiB elements");
            SplittableRandom random = new SplittableRandom(format.ordinal() * 4 + (indirect ? 2 : 0) + (eventFds ? 1 : 0));
            for (int q = 0; q < 2; q++) {
                int depth = d.depth(q);
                assertTrue(indirect ? depth == 16 : depth == 64 / 6, "depth " + depth);
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
                    assertEquals(sums[i], crc(device.disk, sectors[i] * BlkLayout.SECTOR, bytes[i]), "on disk, range " + i);
                }
                assertEquals(0, d.inFlight(q));
            }
            assertTrue(device.longestElement.get() <= 4096, "longest element " + device.longestElement.get());
            assertTrue(device.mostElements.get() <= 4 + 2, "most elements " + device.mostElements.get());
        });
    }

    /** Reaps {@code n} completions, each with {@code expected} status and a used length that fits its request. */
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

    @Test
    void flushGetIdDiscardAndWriteZeroes() throws Exception {
        RamBlkDevice device = new RamBlkDevice(1, DISK, 0, 8, false);
        withDriver(device, BlkDriver.Config.defaults().withMaxRequestBytes(8192), d -> {
            assertEquals(DISK, d.capacityBytes());
            int slot = d.acquire(0);
            d.flush(0, slot);
            assertEquals(BlkLayout.S_OK, status(d, 0, slot));
            slot = d.acquire(0);
            d.getId(0, slot);
            assertEquals(BlkLayout.S_OK, status(d, 0, slot));
            String id = new String(d.data(0, slot).asSlice(0, BlkLayout.ID_BYTES).toArray(ValueLayout.JAVA_BYTE),
                    StandardCharsets.US_ASCII).replace("\0", "");
            assertEquals(RamBlkDevice.ID, id);
            slot = d.acquire(0);
            d.data(0, slot).asSlice(0, 8192).fill((byte) 0x5A);
            d.write(0, slot, 10, 8192);
            assertEquals(BlkLayout.S_OK, status(d, 0, slot));
            slot = d.acquire(0);
            d.writeZeroes(0, slot, 12, 4, true);
            assertEquals(BlkLayout.S_OK, status(d, 0, slot));
            for (long b = 0; b < 8192; b++) {
                byte expected = b >= 1024 && b < 3072 ? 0 : (byte) 0x5A;
                assertEquals(expected, device.disk.get(ValueLayout.JAVA_BYTE, 10 * 512 + b), "byte " + b);
            }
            slot = d.acquire(0);
            d.discard(0, slot, 0, 8);
            assertEquals(BlkLayout.S_OK, status(d, 0, slot));
            slot = d.acquire(0);
            d.read(0, slot, DISK / BlkLayout.SECTOR - 1, 1024); // past the end
            assertEquals(BlkLayout.S_IOERR, status(d, 0, slot));
        });
    }

    /** A status byte of 7, or none written: a named error for that slot, which is free again; the queue goes on. */
    @ParameterizedTest
    @CsvSource({"7", "256"})
    void aStatusOutsideTheSpecIsNamed(int forced) throws Exception {
        RamBlkDevice device = new RamBlkDevice(1, DISK, 0, 8, false);
        withDriver(device, BlkDriver.Config.defaults().withDepth(4), d -> {
            device.forcedStatus = forced;
            int slot = d.acquire(0);
            d.flush(0, slot);
            BadCompletionException e = assertThrows(BadCompletionException.class, () -> d.run(0, slot, TIMEOUT));
            assertEquals(slot, e.slot());
            assertTrue(e.getMessage().contains(forced == 7 ? "status 7" : "status 255"), e.getMessage());
            if (forced != 7) {
                assertTrue(e.getMessage().contains("did not write"), e.getMessage());
            }
            assertEquals(0, d.inFlight(0));
            device.forcedStatus = -1;
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
     * connection serves them (each ring resumes at its used index) and every slot completes once, data intact.
     * Then the same through a listening driver, which the back-end connects to.
     */
    @ParameterizedTest
    @CsvSource({"false", "true"})
    void requestsQueuedWhileTheBackendIsAwayAreServedAfterReconnect(boolean listening) throws Exception {
        RamBlkDevice device = new RamBlkDevice(1, DISK, 0, 8, false);
        Path dir = Files.createTempDirectory("v4j-blk");
        Path path = dir.resolve("blk.sock");
        VhostUserBackendEndpoint endpoint = new VhostUserBackendEndpoint(
                () -> new VhostUserSession(device, BackendOptions.defaults()));
        Thread server = Thread.ofPlatform().daemon().start(() -> {
            try {
                if (listening) {
                    endpoint.connect(path);
                } else {
                    endpoint.listen(path);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        BlkDriver.Config config = BlkDriver.Config.defaults().withDepth(8).withMaxRequestBytes(4096);
        try (BlkDriver d = listening ? BlkDriver.listen(path, config, TIMEOUT) : BlkDriver.connect(path, config, TIMEOUT)) {
            int slot = d.acquire(0);
            d.data(0, slot).asSlice(0, 4096).fill((byte) 1);
            d.write(0, slot, 0, 4096);
            assertEquals(BlkLayout.S_OK, d.run(0, slot, TIMEOUT));
            d.session().disconnect();
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (device.serving()) { // the back-end stops the rings once it sees the connection closed
                assertTrue(System.nanoTime() - deadline < 0, "the back-end did not stop its rings");
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
                assertEquals(sums[i], crc(device.disk, 4096L * (i + 1), 4096), "range " + i + " on disk");
            }
        } finally {
            endpoint.close();
            server.join(TIMEOUT.toMillis());
            device.close();
            Files.deleteIfExists(path);
            Files.deleteIfExists(dir);
        }
    }

    @Test
    void requestsLargerThanSegMaxAllowsAreRefusedAtConnect() {
        RamBlkDevice device = new RamBlkDevice(1, DISK, 4096, 4, false);
        NegotiationFailedException e = assertThrows(NegotiationFailedException.class, () -> withDriver(device,
                BlkDriver.Config.defaults().withMaxRequestBytes(32768), d -> { }));
        assertTrue(e.getMessage().contains("SEG_MAX is 4"), e.getMessage());
    }

    @Test
    void misuseIsRefused() throws Exception {
        RamBlkDevice device = new RamBlkDevice(1, DISK, 0, 8, true);
        withDriver(device, BlkDriver.Config.defaults().withDepth(2), d -> {
            assertTrue(d.readOnly());
            assertThrows(IllegalStateException.class, () -> d.read(0, 0, 0, 512), "not acquired");
            int slot = d.acquire(0);
            assertThrows(IllegalArgumentException.class, () -> d.read(0, slot, 0, 100), "not whole sectors");
            assertThrows(IllegalArgumentException.class, () -> d.read(0, slot, 0, 0), "empty");
            assertThrows(IllegalArgumentException.class,
                    () -> d.read(0, slot, 0, d.config().maxRequestBytes() + BlkLayout.SECTOR), "too long");
            assertThrows(IllegalStateException.class, () -> d.write(0, slot, 0, 512), "read-only");
            assertThrows(IllegalArgumentException.class, () -> d.discard(0, slot, 0, 1L << 32), "too many sectors");
            d.read(0, slot, 0, 512);
            assertThrows(IllegalStateException.class, () -> d.read(0, slot, 0, 512), "in flight");
            assertThrows(IllegalStateException.class, () -> d.run(0, 1 - slot, TIMEOUT), "not in flight");
            assertEquals(BlkLayout.S_OK, status(d, 0, slot));
        });
    }
}
