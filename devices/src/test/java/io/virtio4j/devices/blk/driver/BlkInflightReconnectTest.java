package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.BlkDevice;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.os.EventFd;
import io.virtio4j.testkit.DiskImages;
import io.virtio4j.testkit.Bytes;
import io.virtio4j.testkit.FlightRecording;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reconnection through the back-end's inflight area (INFLIGHT_SHMFD), in process, for split and packed rings: a
 * back-end ({@link DyingInflightBlkDevice}) takes six writes and dies leaving two never started, two performed and
 * returned out of order, and two performed and pushed used but never published. The front-end keeps the area
 * ({@code FrontendSession} asks for it by default) and hands it to the next back-end, the real {@link BlkDevice} on
 * the same file, which resubmits the four the driver never got back: every request completes exactly once, the file
 * holds every request's data (checksums), and no kick is needed for the resubmitted ones (the kick eventfd is
 * drained before the reconnection, and the front-end sends none with an area). The new back-end's resubmission is
 * recorded as a JFR event with its count.
 */
@ExtendWith(NoFdLeaks.class)
class BlkInflightReconnectTest {
    private static final long DISK = 4L << 20;
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final long WAIT_NANOS = 20_000_000_000L;
    private static final int BYTES = 4096;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void requestsTheDeadBackendTookCompleteOnceThroughTheInflightArea(RingFormat format) throws Exception {
        Path f = DiskImages.sparse(dir.resolve("disk.img"), DISK);
        Path path = dir.resolve("blk.sock");
        DyingInflightBlkDevice dying = new DyingInflightBlkDevice(f, DISK / BlkLayout.SECTOR);
        List<RecordedEvent> events;
        try (FlightRecording recording = FlightRecording.start();
             BlockStore store = BlockStore.open(f.toString(), false, 512);
             BlkDevice blk = new BlkDevice(store, new BlkDevice.Options(1, BlockEngine.SYNC, 16, 64, new int[0],
                     "inflight", NotificationMode.NOTIFY, 20_000))) {
            AtomicInteger connections = new AtomicInteger();
            VhostUserBackendEndpoint endpoint = new VhostUserBackendEndpoint(() -> {
                VirtioDevice device = connections.getAndIncrement() == 0 ? dying : blk;
                return new VhostUserSession(device, BackendOptions.defaults());
            });
            Thread server = BackendThread.start(endpoint, path, false);
            BlkDriver.Config config = BlkDriver.Config.defaults().withFormat(format).withQueueSize(64).withDepth(8)
                    .withMaxRequestBytes(BYTES);
            try (BlkDriver d = BlkDriver.connect(path, config, TIMEOUT)) {
                VhostUserFrontend.InflightArea area = d.session().inflightArea();
                assertNotNull(area, "the session asked for an inflight area at start");
                SplittableRandom random = new SplittableRandom(12);
                int[] request = new int[8]; // which request each slot carries
                long[] sums = new long[DyingInflightBlkDevice.TAKEN];
                for (int r = 0; r < DyingInflightBlkDevice.TAKEN; r++) {
                    int slot = d.acquire(0);
                    request[slot] = r;
                    MemorySegment data = d.data(0, slot);
                    for (int b = 0; b < BYTES; b += 8) {
                        data.set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
                    }
                    sums[r] = Bytes.crc(data, 0, BYTES);
                    d.write(0, slot, sector(r), BYTES);
                }
                d.kick(0);
                int[] done = new int[DyingInflightBlkDevice.TAKEN];
                BlkDriver.Completion count = (slot, status, used) -> {
                    assertEquals(BlkLayout.S_OK, status, "request " + request[slot]);
                    done[request[slot]]++;
                };
                long deadline = System.nanoTime() + WAIT_NANOS;
                while (done[1] + done[4] < 2 || !dying.dead) {
                    assertTrue(System.nanoTime() - deadline < 0, "the dying back-end returns two: " + Arrays.toString(done));
                    if (d.complete(0, count) == 0) {
                        d.await(0, 1_000_000);
                    }
                }
                assertEquals("[0, 1, 0, 0, 1, 0]", Arrays.toString(done), "the 2nd and 5th came back, out of order");
                d.session().disconnect();
                while (dying.resets == 0) { // the back-end saw the connection end: it touches nothing any more
                    assertTrue(System.nanoTime() - deadline < 0, "the back-end did not end the connection");
                    Thread.sleep(1);
                }
                // No kick is pending for the new back-end: what it serves it finds by looking at the ring once started.
                EventFd kick = d.session().ring(0).kick().eventFd();
                kick.tryRead();
                d.reconnect(TIMEOUT);
                assertTrue(area == d.session().inflightArea(), "the same area is handed back");
                while (Arrays.stream(done).sum() < DyingInflightBlkDevice.TAKEN) {
                    assertTrue(System.nanoTime() - deadline < 0, "completions after reconnect: " + Arrays.toString(done));
                    if (d.complete(0, count) == 0) {
                        d.await(0, 1_000_000);
                    }
                }
                assertEquals(0, d.inFlight(0));
                assertEquals(0, d.complete(0, count), "nothing completes twice");
                assertEquals("[1, 1, 1, 1, 1, 1]", Arrays.toString(done), "each request completed once");
                for (int r = 0; r < DyingInflightBlkDevice.TAKEN; r++) {
                    assertEquals(sums[r], fileCrc(f, sector(r) * BlkLayout.SECTOR), "request " + r + " in the file");
                    int slot = d.acquire(0);
                    d.data(0, slot).fill((byte) 0);
                    d.read(0, slot, sector(r), BYTES);
                    assertEquals(BlkLayout.S_OK, d.run(0, slot, TIMEOUT));
                    assertEquals(sums[r], Bytes.crc(d.data(0, slot), 0, BYTES), "request " + r + " read back");
                }
                // exactly the four the dead back-end did not return ran again (the 3rd and 6th a second time on the
                // disk, with the same data), the two it returned did not
                assertEquals(4, blk.stats(0).writes(), "writes the new back-end performed");
            } finally {
                endpoint.close();
                server.join(TIMEOUT.toMillis());
            }
            events = recording.stop(dir.resolve("reconnect.jfr"));
        }
        // the second connection's control thread resubmitted the four, on ring 0
        List<RecordedEvent> resubmitted = FlightRecording.named(events, "InflightResubmitted").stream()
                .filter(FlightRecording.on(path + " #2")).toList();
        assertEquals(1, resubmitted.size(), resubmitted::toString);
        assertEquals(0, resubmitted.get(0).getInt("queue"));
        assertEquals(DyingInflightBlkDevice.TAKEN - 2, resubmitted.get(0).getInt("count"));
        // Ring 0 started where the queue stands after its recovery, past the four it resubmitted, not at the base
        // the front-end sent (the used index, 2: what the dead back-end returned).
        List<RecordedEvent> started = FlightRecording.named(events, "RingStarted").stream()
                .filter(FlightRecording.on(path + " #2")).filter(e -> e.getInt("queue") == 0).toList();
        assertEquals(1, started.size(), started::toString);
        assertEquals(DyingInflightBlkDevice.TAKEN, started.get(0).getInt("nextAvail"), started.get(0)::toString);
        assertEquals(2, started.get(0).getInt("nextUsed"), started.get(0)::toString);
    }

    /** Each request writes its own 4 KiB, apart from the others. */
    private static long sector(int request) {
        return 16L * (request + 1);
    }

    private static long fileCrc(Path f, long offset) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(BYTES);
        try (FileChannel ch = FileChannel.open(f)) {
            while (b.hasRemaining()) {
                if (ch.read(b, offset + b.position()) < 0) {
                    throw new AssertionError("the file ends before " + (offset + BYTES));
                }
            }
        }
        return Bytes.crc(b.array());
    }
}
