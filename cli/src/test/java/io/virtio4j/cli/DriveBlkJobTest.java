package io.virtio4j.cli;

import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.UsedLengthTooLargeException;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.BlkDevice;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.driver.BadCompletionException;
import io.virtio4j.devices.blk.driver.BlkDriver;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.frontend.FrontendSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.PrintStream;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue's load in {@code drive blk} allocates nothing once running, with and without --verify: a second run of the
 * same job on the same thread is measured (the first one warms up and creates the per-slot buffer views). Against
 * qemu-storage-daemon's null-co export (reads zeros), through {@code peers/qsd.sh}. And a completion for no request in
 * flight (a request completed twice) is counted, not swallowed.
 */
class DriveBlkJobTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = DriveBlk.Rw.class, names = {"RANDREAD", "RANDRW"})
    void aRunningQueueAllocatesNothing(DriveBlk.Rw rw) throws Exception {
        Path socket = dir.resolve("blk.sock");
        Process qsd = new ProcessBuilder(List.of("bash", PeerRuns.script("qsd.sh").toString(), "--socket",
                socket.toString(), "--size", "16M")).redirectErrorStream(true)
                .redirectOutput(dir.resolve("qsd.log").toFile()).start();
        try (BlkDriver d = BlkDriver.connect(socket, BlkDriver.Config.defaults().withDepth(16).withMaxRequestBytes(4096),
                Duration.ofSeconds(30))) {
            boolean verify = rw == DriveBlk.Rw.RANDRW;
            ByteArrayOutputStream errors = new ByteArrayOutputStream();
            DriveBlk.Job job = new DriveBlk.Job(d, 0, d.depth(0), 4096, rw, 50, 0, d.capacityBytes() / 4096, verify, 7,
                    true, 30_000_000_000L, new PrintStream(errors, true));
            com.sun.management.ThreadMXBean tmx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            job.deadline = System.nanoTime() + 1_000_000_000L;
            job.run();
            long before = tmx.getCurrentThreadAllocatedBytes();
            job.deadline = System.nanoTime() + 1_000_000_000L;
            job.run();
            long allocated = tmx.getCurrentThreadAllocatedBytes() - before;
            assertEquals(null, job.failure);
            assertEquals(0, job.ioErrors, errors.toString());
            assertEquals(0, job.verifyErrors, errors.toString());
            long requests = job.readsDone() + job.writesDone();
            assertTrue(requests > 1000, requests + " requests");
            assertEquals(0, d.inFlight(0), "drained");
            // the second run's allocation over its requests: nothing per request (a few objects of the clock or the
            // first await of a run would still be far below one byte per request)
            assertTrue(allocated < requests / 2, allocated + " bytes allocated over " + requests + " requests");
        } finally {
            qsd.destroy();
            if (!qsd.waitFor(10, TimeUnit.SECONDS)) {
                qsd.destroyForcibly();
            }
        }
    }

    /**
     * A device that completes a request that is not in flight (a second completion, as a back-end that resubmitted
     * something already returned would): the queue's job counts it as duplicated, ends with the ring's violation,
     * and counts the requests it had in flight as lost. The device is the real one, stopped, and its used ring then
     * forged, as a hostile back-end writes it.
     */
    @Test
    void aCompletionOfNoRequestInFlightIsCountedDuplicatedAndTheRequestsInFlightLost() throws Exception {
        // the last descriptor: with indirect tables each request takes one, from the first, so never in flight
        DriveBlk.Job job = runOverForgedCompletion(DriveBlk.Rw.RANDREAD, -1, 4096 + 1);
        assertInstanceOf(InvalidUsedIdException.class, job.failure);
        assertEquals(1, job.duplicated);
        assertEquals(4, job.lost(), "the requests in flight when the queue broke");
    }

    /**
     * A second completion of an earlier request landing on its id, now reused by a request the device never
     * finished: the status byte is still the driver's 0xFF. Counted as duplicated (the run gets to its report), the
     * request it names and the others in flight lost.
     */
    @Test
    void aCompletionOnAReusedIdTheDeviceNeverFinishedIsCountedDuplicated() throws Exception {
        DriveBlk.Job job = runOverForgedCompletion(DriveBlk.Rw.RANDREAD, 0, 4096 + 1);
        BadCompletionException e = assertInstanceOf(BadCompletionException.class, job.failure);
        assertEquals(0xFF, e.value());
        assertTrue(DriveBlk.Job.isDuplicate(e));
        assertEquals(1, job.duplicated);
        assertEquals(4, job.lost(), "the request it named is not done, nor the three others");
    }

    /**
     * An earlier read's completion landing on a reused id now held by a write: its used length (data + status) is
     * past the write's one writable byte. Counted as duplicated.
     */
    @Test
    void aReadsCompletionOnAWritesIdIsCountedDuplicated() throws Exception {
        DriveBlk.Job job = runOverForgedCompletion(DriveBlk.Rw.RANDWRITE, 0, 4096 + 1);
        assertInstanceOf(UsedLengthTooLargeException.class, job.failure);
        assertEquals(1, job.duplicated);
        assertEquals(4, job.lost());
    }

    /**
     * A completion with status OK but another length than the request returns (a read's is its bytes and the
     * status, a write's the status): the completion of another request on that id. The job refuses it, naming the
     * length, and counts it as duplicated.
     */
    @Test
    void aCompletionWithAnotherRequestsUsedLengthIsADuplicate() throws Exception {
        withStoppedDriver(d -> {
            DriveBlk.Job job = new DriveBlk.Job(d, 0, d.depth(0), 4096, DriveBlk.Rw.RANDREAD, 50, 0, 256, false, 7,
                    true, 30_000_000_000L, System.err);
            // slot 0 was never submitted: a read (of 4096 bytes) as far as the job knows
            BadCompletionException e = assertThrows(BadCompletionException.class,
                    () -> job.completed(0, BlkLayout.S_OK, 1));
            assertEquals("used length", e.field());
            assertEquals(1, e.value());
            assertTrue(DriveBlk.Job.isDuplicate(e));
            assertEquals(0, job.completedTotal, "not taken as the read's completion");
            job.completed(0, BlkLayout.S_OK, 4096 + 1);
            assertEquals(1, job.completedTotal, "the read's own length is taken");
        });
    }

    /**
     * A signal that came as a write --verify job's load ended (the hook set the job's stop flag; its deadline cut
     * landed before the job lifted the deadline for the read-back): the read-back pass issues nothing, the run
     * drains and reports as the hook promised.
     */
    @Test
    void aSignalBeforeTheReadBackPassIsHonoured() throws Exception {
        withDriver(false, d -> {
            ByteArrayOutputStream errors = new ByteArrayOutputStream();
            DriveBlk.Job job = new DriveBlk.Job(d, 0, d.depth(0), 4096, DriveBlk.Rw.RANDWRITE, 50, 0, 256, true, 7,
                    true, 30_000_000_000L, new PrintStream(errors, true));
            job.stopped = true;
            job.deadline = System.nanoTime() + 100_000_000L;
            job.run();
            assertEquals(null, job.failure, errors.toString());
            assertTrue(job.writesDone() > 0, "the load ran");
            assertEquals(0, job.readsDone(), "no read-back after the signal");
            assertEquals(0, d.inFlight(0), "drained");
            assertEquals(0, job.lost());
        });
    }

    /**
     * Runs a job of four requests over the real device, stopped so that they stay in flight, after a forged used
     * entry ({@code id}, {@code len}) was put in its used ring as a hostile back-end writes it ({@code id} -1: the
     * ring's last descriptor, never in flight).
     */
    private static DriveBlk.Job runOverForgedCompletion(DriveBlk.Rw rw, int id, int len) throws Exception {
        DriveBlk.Job[] job = new DriveBlk.Job[1];
        withStoppedDriver(d -> {
            SplitRingAreas ring = (SplitRingAreas) d.session().ring(0).areas();
            UsedRing used = new UsedRing(ring.usedRing(), ring.queueSize());
            // with indirect tables each request takes one descriptor, from the first
            used.elem(0, id < 0 ? ring.queueSize() - 1 : id, len);
            used.idxRelease(1);
            ByteArrayOutputStream errors = new ByteArrayOutputStream();
            job[0] = new DriveBlk.Job(d, 0, d.depth(0), 4096, rw, 50, 0, 256, false, 7, true, 30_000_000_000L,
                    new PrintStream(errors, true));
            job[0].deadline = System.nanoTime() + 1_000_000_000L;
            job[0].run();
            assertTrue(job[0].failure != null, errors.toString());
        });
        return job[0];
    }

    private interface DriverUse {
        void accept(BlkDriver d) throws Exception;
    }

    /** A driver of depth 4 over the real device, stopped: the device no longer takes requests. */
    private static void withStoppedDriver(DriverUse use) throws Exception {
        withDriver(true, use);
    }

    private static void withDriver(boolean stopped, DriverUse use) throws Exception {
        BlockStore store = BlockStore.ofNull(1 << 20, false, 512);
        BlkDevice device = new BlkDevice(store, new BlkDevice.Options(1, BlockEngine.SYNC, 16, 64, new int[0], "dup",
                NotificationMode.NOTIFY, 20_000));
        InProcessBackend.Connected c = InProcessBackend.start(device, "dup");
        try (BlkDriver d = BlkDriver.start(FrontendSession.over(c.frontend()),
                BlkDriver.Config.defaults().withDepth(4).withMaxRequestBytes(4096))) {
            if (stopped) {
                d.stop();
            }
            use.accept(d);
        } finally {
            device.close();
            store.close();
        }
    }
}
