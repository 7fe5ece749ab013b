package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.virtio4j.cli.PeerRuns.field;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * kill -9 chaos: {@code serve blk} over a file (its own JVM, as a user starts it) under {@code drive blk --verify
 * --reconnect} (its own JVM: a random read/write mix over two queues, every read checked against the last write of its
 * block, every block written read back at the end), killed with SIGKILL at a random point and restarted on the same
 * socket, {@value #DEFAULT_KILLS} times. Then drive blk is stopped (SIGTERM, as fio's Ctrl-C) and must report 0 requests
 * lost, 0 completed twice, 0 blocks that did not verify and 0 I/O errors, and every block of the image must be a whole
 * block drive blk wrote (or never written). The requests a killed back-end had in flight are resubmitted by the
 * session: through the back-end's inflight area when it offers INFLIGHT_SHMFD, else offered again by the driver.
 *
 * <p>Seeded: the seed is printed, {@code -Dvirtio4j.chaos.seed=N} replays the kill times. Longer forms:
 * {@code -Dvirtio4j.chaos.kills=N}, and {@code -Dvirtio4j.chaos.runs=io_uring:on,sync:off,sync:on:packed,...} for
 * other I/O engines of serve blk (or {@code qsd}: qemu-storage-daemon), drive blk's {@code --inflight} and {@code --ring} (CI runs {@value #DEFAULT_RUNS}:
 * the io_uring engine, whose completions come out of order, on split and packed rings with the back-end's inflight
 * area; packed rings resume only with it).
 */
class BlkChaosTest {
    private static final int DEFAULT_KILLS = 100;
    private static final String DEFAULT_RUNS = "io_uring:on,io_uring:on:packed";
    private static final int KILLS = Integer.getInteger("virtio4j.chaos.kills", DEFAULT_KILLS);
    private static final long IMAGE_BYTES = 64L << 20;
    private static final long REGION_BYTES = 32L << 20;
    private static final int BS = 4096;
    /** Exit status of a JVM killed by SIGKILL (128 + 9). */
    private static final int KILLED = 137;

    @TempDir
    Path dir;
    /** drive blk's reconnections counted when the running back-end was started. */
    private int reconnectsSeen;
    /** Whether drive blk is known to be connected to the running back-end. */
    private boolean connected;

    /** serve blk's I/O engine, drive blk's --inflight and --ring (split unless given), per run. */
    static Stream<Arguments> runs() {
        return Stream.of(System.getProperty("virtio4j.chaos.runs", DEFAULT_RUNS).split(",")).map(r -> {
            String[] run = r.trim().split(":");
            return Arguments.of(run[0], run[1], run.length > 2 ? run[2] : "split");
        });
    }

    @ParameterizedTest(name = "--io {0}, --inflight {1}, --ring {2}")
    @MethodSource("runs")
    void driveBlkLosesNothingWhileItsBackEndIsKilledAgainAndAgain(String engine, String inflight, String ring)
            throws Exception {
        long seed = Long.getLong("virtio4j.chaos.seed", System.nanoTime());
        System.out.printf(Locale.ROOT, "chaos: engine %s, inflight %s, ring %s, %d kills, seed %d (replay: "
                + "-Dvirtio4j.chaos.seed=%d)%n", engine, inflight, ring, KILLS, seed, seed);
        SplittableRandom random = new SplittableRandom(seed);
        Path image = dir.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(IMAGE_BYTES);
        }
        Path socket = dir.resolve("blk.sock");
        Path backendLog = dir.resolve("backend.log");
        Path driveLog = dir.resolve("drive.log");
        long t0 = System.nanoTime();
        Process backend = serve(engine, socket, image, backendLog);
        Process drive = null;
        try {
            List<String> argv = new ArrayList<>(List.of(PeerRuns.cli().split(" ")));
            argv.addAll(List.of("drive", "blk", "--socket", socket.toString(), "--rw", "randrw", "--verify", "--bs",
                    Integer.toString(BS), "--iodepth", "32", "--queues", "2", "--size", Long.toString(REGION_BYTES),
                    "--duration", "3600", "--reconnect", "--reconnect-timeout", "120", "--stall-timeout", "60",
                    "--inflight", inflight, "--ring", ring));
            drive = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(driveLog.toFile()).start();
            // it runs once its banner is out (printed after it connected)
            awaitLine(drive, driveLog, "drive blk: randrw");
            connected = true;
            long waited = 0;
            int settled = 0;
            for (int kill = 1; kill <= KILLS; kill++) {
                // Three kills in four hit a back-end drive blk is connected to, with requests in flight; the others
                // may land anywhere, the set-up messages included (drive blk is then still reconnecting).
                if (random.nextInt(4) != 0) {
                    awaitReconnect(drive, driveLog);
                    settled++;
                }
                long wait = random.nextLong(20, 401);
                waited += wait;
                Thread.sleep(wait);
                if (!backend.isAlive()) {
                    fail("the back-end died on its own before kill " + kill + " (exit " + backend.exitValue() + "):\n"
                            + tail(backendLog) + "\ndrive blk:\n" + tail(driveLog));
                }
                backend.destroyForcibly(); // SIGKILL
                assertTrue(backend.waitFor(30, TimeUnit.SECONDS), "the back-end survived SIGKILL " + kill);
                assertEquals(KILLED, backend.exitValue(), "kill " + kill + ": the back-end did not die of SIGKILL");
                assertTrue(drive.isAlive(), "drive blk ended at kill " + kill + ":\n" + tail(driveLog));
                reconnectsSeen = reconnects(driveLog); // none can come until the next back-end listens
                connected = false;
                backend = serve(engine, socket, image, backendLog);
            }
            awaitReconnect(drive, driveLog);
            Thread.sleep(random.nextLong(20, 401));
            drive.destroy(); // SIGTERM: the load ends, requests in flight drain, every block written is read back
            assertTrue(drive.waitFor(180, TimeUnit.SECONDS), "drive blk did not end after SIGTERM:\n" + tail(driveLog));
            String log = Files.readString(driveLog);
            System.out.println(log.lines().filter(l -> !l.startsWith("drive blk: [")).reduce("", (a, b) -> a + b + "\n"));
            String result = log.lines().filter(l -> l.startsWith("RESULT ")).findFirst()
                    .orElseThrow(() -> new AssertionError("drive blk printed no RESULT line:\n" + tail(driveLog)));
            long reconnects = field(result, "reconnects");
            long requests = field(result, "requests");
            System.out.printf(Locale.ROOT, "chaos: engine %s, inflight %s: %d kills (%d of a back-end drive blk was connected to) in "
                            + "%.1f s (%.1f s of it waited at random), %d "
                            + "requests (%d reads, %d writes), %d reconnects, lost %d, duplicated %d, verify errors %d, "
                            + "io errors %d%n", engine, inflight, KILLS, settled, (System.nanoTime() - t0) / 1e9, waited / 1e3, requests,
                    field(result, "read-requests"), field(result, "write-requests"), reconnects, field(result, "lost"),
                    field(result, "duplicated"), field(result, "verify-errors"), field(result, "io-errors"));
            assertEquals(0, field(result, "lost"), result);
            assertEquals(0, field(result, "duplicated"), result);
            assertEquals(0, field(result, "verify-errors"), result);
            assertEquals(0, field(result, "io-errors"), result);
            // the path the run meant to take: serve blk offers INFLIGHT_SHMFD (qemu-storage-daemon 7.2 does not)
            assertTrue(result.contains(" inflight=" + (inflight.equals("on") && !engine.equals("qsd")) + " "), result);
            assertEquals(0, drive.exitValue(), tail(driveLog));
            // every back-end drive blk was seen connected to before its kill was reconnected to (the first one excepted,
            // connected to at the start), and so was the last
            assertTrue(reconnects >= settled && reconnects <= KILLS, settled + " kills of a connected back-end: " + result);
            assertTrue(field(result, "read-requests") > 0 && field(result, "write-requests") > 0, result);
            assertImageHoldsWholeBlocks(image);
        } finally {
            if (drive != null) {
                drive.destroyForcibly();
            }
            backend.destroy();
            if (!backend.waitFor(30, TimeUnit.SECONDS)) {
                backend.destroyForcibly();
            }
        }
    }

    /**
     * Without --reconnect, a back-end killed under drive blk ends the job at once (not after --stall-timeout): the
     * requests it had in flight are counted lost and drive blk exits {@link DriveBlk#EXIT_LOST}.
     */
    @Test
    void withoutReconnectDriveBlkEndsAtOnceAndCountsTheRequestsLost() throws Exception {
        Path image = dir.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(IMAGE_BYTES);
        }
        Path socket = dir.resolve("blk.sock");
        Path driveLog = dir.resolve("drive.log");
        Process backend = serve("sync", socket, image, dir.resolve("backend.log"));
        Process drive = null;
        try {
            List<String> argv = new ArrayList<>(List.of(PeerRuns.cli().split(" ")));
            argv.addAll(List.of("drive", "blk", "--socket", socket.toString(), "--rw", "randrw", "--verify", "--size",
                    Long.toString(REGION_BYTES), "--duration", "3600", "--stall-timeout", "600"));
            drive = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(driveLog.toFile()).start();
            awaitLine(drive, driveLog, "drive blk: ["); // running: its first progress line is out
            backend.destroyForcibly();
            assertTrue(drive.waitFor(60, TimeUnit.SECONDS), "drive blk still runs:\n" + tail(driveLog));
            String log = Files.readString(driveLog);
            assertEquals(DriveBlk.EXIT_LOST, drive.exitValue(), log);
            assertTrue(log.contains("drive blk: the back-end closed the connection (--reconnect waits for it to come "
                    + "back): "), log);
            String result = log.lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow(() -> new AssertionError(log));
            // the queue keeps --iodepth requests in flight: the kill finds some
            assertTrue(field(result, "lost") > 0 && field(result, "lost") <= 32, result);
            assertEquals(0, field(result, "reconnects"), result);
            assertEquals(0, field(result, "duplicated"), result);
            assertEquals(0, field(result, "verify-errors"), result);
        } finally {
            if (drive != null) {
                drive.destroyForcibly();
            }
            backend.destroyForcibly();
        }
    }

    /** Reconnections drive blk reported so far (one stderr line each). */
    private static int reconnects(Path log) throws IOException {
        return (int) Files.readAllLines(log).stream().filter(l -> l.startsWith("drive blk: reconnected (")).count();
    }

    /** Waits until drive blk has reconnected to the back-end started last. */
    private void awaitReconnect(Process drive, Path log) throws IOException, InterruptedException {
        if (connected) {
            return;
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (reconnects(log) <= reconnectsSeen) {
            if (!drive.isAlive() || System.nanoTime() > until) {
                fail("drive blk did not reconnect:\n" + tail(log));
            }
            Thread.sleep(5);
        }
        connected = true;
    }

    /**
     * Starts serve blk on {@code socket} (removing what a killed one left there) and waits until it listens. Engine
     * {@code qsd}: qemu-storage-daemon instead ({@code peers/qsd.sh}, libvhost-user's inflight tracking), the
     * reference for drive blk's side.
     */
    private static Process serve(String engine, Path socket, Path image, Path log) throws IOException, InterruptedException {
        Files.deleteIfExists(socket);
        List<String> argv = new ArrayList<>();
        if (engine.equals("qsd")) {
            argv.addAll(List.of("bash", PeerRuns.script("qsd.sh").toString(), "--socket", socket.toString(), "--image",
                    image.toString(), "--queues", "2"));
        } else {
            argv.addAll(List.of(PeerRuns.cli().split(" ")));
            // a back-end started a hundred times: C1 only and the serial collector halve the JVM's start-up (the
            // time to listen), which is most of this test's run time
            argv.addAll(1, List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
            argv.addAll(List.of("serve", "blk", "--socket", socket.toString(), "--file", image.toString(), "--io",
                    engine, "--queues", "2"));
        }
        Process p = new ProcessBuilder(argv).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.exists(socket)) {
            if (!p.isAlive() || System.nanoTime() > until) {
                p.destroyForcibly();
                fail("serve blk did not listen on " + socket + ":\n" + tail(log));
            }
            Thread.sleep(5);
        }
        return p;
    }

    private static void awaitLine(Process p, Path log, String prefix) throws IOException, InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (Files.readAllLines(log).stream().noneMatch(l -> l.startsWith(prefix))) {
            if (!p.isAlive() || System.nanoTime() > until) {
                fail("no line starting with '" + prefix + "':\n" + tail(log));
            }
            Thread.sleep(10);
        }
    }

    /**
     * Every block of the region is a whole block drive blk wrote at that offset (magic, offset, CRC32C of all of it)
     * or was never written (zeros): a write cut in half by a kill, or landed elsewhere, fails.
     */
    private static void assertImageHoldsWholeBlocks(Path image) throws IOException {
        BlockPattern pattern = new BlockPattern();
        ByteBuffer b = ByteBuffer.allocateDirect(BS);
        long written = 0;
        try (FileChannel ch = FileChannel.open(image, StandardOpenOption.READ)) {
            for (long off = 0; off < REGION_BYTES; off += BS) {
                b.clear();
                while (b.hasRemaining() && ch.read(b, off + b.position()) > 0) {
                    // reads until the block is whole
                }
                if (isZero(b)) {
                    continue;
                }
                BlockPattern.Verdict v = pattern.check(b, BS, off, 0, BlockPattern.ANY_GENERATION);
                assertEquals(BlockPattern.Verdict.OK, v, "block at byte " + off + " of the image");
                written++;
            }
        }
        System.out.printf(Locale.ROOT, "chaos: the image holds %d whole blocks written, %d never written%n", written,
                REGION_BYTES / BS - written);
        assertTrue(written > 0, "no block written");
    }

    private static boolean isZero(ByteBuffer b) {
        for (int i = 0; i < BS; i += 8) {
            if (b.getLong(i) != 0) {
                return false;
            }
        }
        return true;
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }
}
