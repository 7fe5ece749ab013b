package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.blk.BlkLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BlkDriver} against a real vhost-user-blk back-end: qemu-storage-daemon exporting a temporary image (each
 * test starts its own). A smoke test of the client (H4's conformance suite goes further): configuration, data
 * written and read back intact (checksums, many requests in flight), GET_ID, FLUSH, and no allocation per request in
 * steady state. Skipped where qemu-storage-daemon is not installed.
 */
class BlkDriverQsdTest {
    private static final Path QSD = Path.of("/usr/bin/qemu-storage-daemon");
    private static final long IMAGE_BYTES = 16L << 20;
    private static final Duration PATIENCE = Duration.ofSeconds(20);
    private static final long WAIT_NANOS = 10_000_000_000L;

    @TempDir
    Path dir;
    private final List<Process> daemons = new ArrayList<>();

    @AfterEach
    void stopDaemons() throws InterruptedException {
        for (Process p : daemons) {
            p.destroy();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor();
            }
        }
    }

    /** Starts qemu-storage-daemon exporting a fresh image of {@link #IMAGE_BYTES} with {@code queues} queues. */
    private Path qsd(int queues) throws IOException {
        Path image = dir.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(IMAGE_BYTES);
        }
        return qsd("driver=file,node-name=f0,filename=" + image, queues);
    }

    /** Starts qemu-storage-daemon exporting block device {@code blockdev} (node f0) with {@code queues} queues. */
    private Path qsd(String blockdev, int queues) throws IOException {
        Assumptions.assumeTrue(Files.isExecutable(QSD), "qemu-storage-daemon is not installed");
        Path socket = dir.resolve("blk.sock");
        Process p = new ProcessBuilder(QSD.toString(),
                "--blockdev", blockdev,
                "--export", "type=vhost-user-blk,id=e0,node-name=f0,addr.type=unix,addr.path=" + socket
                        + ",writable=on,num-queues=" + queues)
                .redirectErrorStream(true).redirectOutput(dir.resolve("qsd.log").toFile()).start();
        daemons.add(p);
        return socket;
    }

    @Test
    void configurationIsReadAndChecked() throws Exception {
        try (BlkDriver d = BlkDriver.connect(qsd(2), BlkDriver.Config.defaults().withQueues(2), PATIENCE)) {
            assertEquals(IMAGE_BYTES, d.capacityBytes());
            assertEquals(IMAGE_BYTES / BlkLayout.SECTOR, d.deviceConfig().capacity());
            assertFalse(d.readOnly(), "exported writable");
            long f = d.negotiatedFeatures();
            assertTrue(VirtioFeatures.has(f, VirtioFeatures.VERSION_1));
            assertTrue((f & BlkLayout.bit(BlkLayout.F_FLUSH)) != 0, "qemu-storage-daemon offers FLUSH");
            assertTrue((f & BlkLayout.bit(BlkLayout.F_MQ)) != 0, "two queues need MQ");
            assertTrue(d.deviceConfig().numQueues() >= 2, "num_queues " + d.deviceConfig().numQueues());
            if ((f & BlkLayout.bit(BlkLayout.F_BLK_SIZE)) != 0) {
                assertEquals(512, d.deviceConfig().blkSize());
            }
        }
    }

    /**
     * Every slot of every queue written with its own random data at its own place, all in flight at once, then
     * flushed, then read back into other slots: the checksums match.
     */
    @Test
    void dataWrittenIsReadBackIntact() throws Exception {
        int queues = 2;
        BlkDriver.Config cfg = BlkDriver.Config.defaults().withQueues(queues).withDepth(16).withMaxRequestBytes(64 << 10);
        try (BlkDriver d = BlkDriver.connect(qsd(queues), cfg, PATIENCE)) {
            SplittableRandom random = new SplittableRandom(42);
            for (int q = 0; q < queues; q++) {
                int depth = d.depth(q);
                long[] sums = new long[depth];
                int[] bytes = new int[depth];
                long[] sectors = new long[depth];
                for (int i = 0; i < depth; i++) {
                    int slot = d.acquire(q);
                    bytes[i] = BlkLayout.SECTOR * (1 + random.nextInt(cfg.maxRequestBytes() / BlkLayout.SECTOR));
                    // disjoint ranges: 64 KiB apart per slot and 1 MiB per queue
                    sectors[i] = ((long) q * (1 << 20) + (long) i * cfg.maxRequestBytes()) / BlkLayout.SECTOR;
                    MemorySegment data = d.data(q, slot);
                    for (int b = 0; b < bytes[i]; b += 8) {
                        data.set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
                    }
                    sums[i] = crc(data, 0, bytes[i]);
                    d.write(q, slot, sectors[i], bytes[i]);
                }
                assertEquals(-1, d.acquire(q), "every slot is taken");
                d.kick(q);
                int[] statuses = drain(d, q, depth);
                for (int s : statuses) {
                    assertEquals(BlkLayout.S_OK, s);
                }
                int flush = d.acquire(q);
                d.flush(q, flush);
                assertEquals(BlkLayout.S_OK, d.run(q, flush, Duration.ofSeconds(10)));
                // read back, each range into a slot other than the one that wrote it
                int[] slotOf = new int[depth];
                for (int i = 0; i < depth; i++) {
                    slotOf[i] = d.acquire(q);
                    d.data(q, slotOf[i]).fill((byte) 0);
                }
                for (int i = 0; i < depth; i++) {
                    d.read(q, slotOf[(i + 1) % depth], sectors[i], bytes[i]);
                }
                d.kick(q);
                long[] used = new long[depth];
                drain(d, q, depth, used);
                for (int i = 0; i < depth; i++) {
                    int slot = slotOf[(i + 1) % depth];
                    assertEquals(sums[i], crc(d.data(q, slot), 0, bytes[i]), "queue " + q + ", range " + i);
                    assertTrue(used[slot] <= bytes[i] + 1L, "used length " + used[slot]);
                }
                assertEquals(0, d.inFlight(q));
            }
        }
    }

    private static int[] drain(BlkDriver d, int q, int n) throws InterruptedException {
        return drain(d, q, n, new long[d.depth(q)]);
    }

    /** Reaps {@code n} completions of queue {@code q}: each slot's status (and used length into {@code used}). */
    private static int[] drain(BlkDriver d, int q, int n, long[] used) throws InterruptedException {
        int[] statuses = new int[n];
        int[] got = {0};
        while (got[0] < n) {
            int reaped = d.complete(q, (slot, status, usedLength) -> {
                statuses[got[0]++] = status;
                used[slot] = usedLength;
            });
            if (reaped == 0 && !d.await(q, WAIT_NANOS)) {
                throw new AssertionError("no completion within " + WAIT_NANOS / 1_000_000 + " ms; " + got[0] + " of " + n);
            }
        }
        return statuses;
    }

    /** The null block driver (reads zeroes, drops writes): capacity as configured, reads come back zero. */
    @Test
    void nullBlockdevReadsZeroes() throws Exception {
        String blockdev = "driver=null-co,node-name=f0,size=" + IMAGE_BYTES + ",read-zeroes=on";
        try (BlkDriver d = BlkDriver.connect(qsd(blockdev, 1), BlkDriver.Config.defaults(), PATIENCE)) {
            assertEquals(IMAGE_BYTES, d.capacityBytes());
            int w = d.acquire(0);
            d.data(0, w).asSlice(0, 65536).fill((byte) 0x77);
            d.write(0, w, 128, 65536);
            assertEquals(BlkLayout.S_OK, d.run(0, w, Duration.ofSeconds(10)));
            int r = d.acquire(0);
            d.data(0, r).asSlice(0, 65536).fill((byte) 0x77);
            d.read(0, r, 128, 65536);
            assertEquals(BlkLayout.S_OK, d.run(0, r, Duration.ofSeconds(10)));
            assertEquals(crc(MemorySegment.ofArray(new byte[65536])), crc(d.data(0, r), 0, 65536), "zeroes");
        }
    }

    @Test
    void getIdAnswersTwentyBytes() throws Exception {
        try (BlkDriver d = BlkDriver.connect(qsd(1), BlkDriver.Config.defaults(), PATIENCE)) {
            int slot = d.acquire(0);
            d.data(0, slot).asSlice(0, BlkLayout.ID_BYTES).fill((byte) 0x55);
            d.getId(0, slot);
            assertEquals(BlkLayout.S_OK, d.run(0, slot, Duration.ofSeconds(10)));
            byte[] id = d.data(0, slot).asSlice(0, BlkLayout.ID_BYTES).toArray(ValueLayout.JAVA_BYTE);
            String text = new String(id, StandardCharsets.US_ASCII).replace("\0", "");
            assertFalse(text.isEmpty(), "an id");
            assertTrue(text.chars().allMatch(c -> c >= 0x20 && c < 0x7F), "printable ASCII padded with NULs: " + text);
            byte[] filler = new byte[BlkLayout.ID_BYTES];
            java.util.Arrays.fill(filler, (byte) 0x55);
            assertFalse(java.util.Arrays.equals(filler, id), "the device wrote the id");
        }
    }

    @Test
    void requestsWithoutIndirectDescriptorsAndStopInOrder() throws Exception {
        BlkDriver.Config cfg = BlkDriver.Config.defaults().withIndirect(false).withEventIdx(false).withQueueSize(64);
        try (BlkDriver d = BlkDriver.connect(qsd(1), cfg, PATIENCE)) {
            assertFalse(VirtioFeatures.has(d.negotiatedFeatures(), VirtioFeatures.INDIRECT_DESC));
            int w = d.acquire(0);
            MemorySegment data = d.data(0, w);
            for (int i = 0; i < 4096; i++) {
                data.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
            }
            byte[] written = data.asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE);
            d.write(0, w, 100, 4096);
            assertEquals(BlkLayout.S_OK, d.run(0, w, Duration.ofSeconds(10)));
            int r = d.acquire(0);
            d.data(0, r).fill((byte) 0);
            d.read(0, r, 100, 4096);
            assertEquals(BlkLayout.S_OK, d.run(0, r, Duration.ofSeconds(10)));
            assertArrayEquals(written, d.data(0, r).asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE));
            d.stop();
        }
    }

    /**
     * Steady-state requests allocate nothing on the driver's thread: rounds of writes and reads (the whole depth in
     * flight, waits between) until one round allocates no byte; rounds repeat until the JIT has compiled the paths,
     * so a slow machine only makes the test longer.
     */
    @Test
    void requestsAllocateNothing() throws Exception {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        BlkDriver.Config cfg = BlkDriver.Config.defaults().withDepth(8).withMaxRequestBytes(4096);
        try (BlkDriver d = BlkDriver.connect(qsd(1), cfg, PATIENCE)) {
            Counter counter = new Counter();
            long least = Long.MAX_VALUE;
            for (int round = 0; round < 2_000 && least > 0; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 50; i++) {
                    cycle(d, counter, i % 2 == 0);
                }
                least = Math.min(least, threads.getCurrentThreadAllocatedBytes() - before);
            }
            assertEquals(0, least, "bytes allocated by the driver in its least allocating round of 50 x 8 requests");
            assertEquals(0, counter.bad, "requests that failed");
        }
    }

    private static final class Counter implements BlkDriver.Completion {
        long done;
        long bad;

        @Override
        public void completed(int slot, int status, long usedLength) {
            done++;
            if (status != BlkLayout.S_OK) {
                bad++;
            }
        }
    }

    private static void cycle(BlkDriver d, Counter counter, boolean write) throws InterruptedException {
        int slot;
        int n = 0;
        while ((slot = d.acquire(0)) >= 0) {
            if (write) {
                d.write(0, slot, (long) slot * 8, 4096);
            } else {
                d.read(0, slot, (long) slot * 8, 4096);
            }
            n++;
        }
        d.kick(0);
        long want = counter.done + n;
        while (counter.done < want) {
            if (d.complete(0, counter) == 0 && !d.await(0, WAIT_NANOS)) {
                throw new AssertionError("no completion within " + WAIT_NANOS / 1_000_000 + " ms");
            }
        }
    }
}
