package io.virtio4j.cli;

import io.virtio4j.testkit.FlightRecording;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.cli.CliRun.execute;
import static io.virtio4j.testkit.FlightRecording.named;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code serve} with a flight recording, as the README says to turn one on: the JVM option
 * {@code -XX:StartFlightRecording:filename=FILE} (the launcher passes {@code VIRTIO4J_JAVA_OPTS} to the JVM). A
 * {@code drive blk} run against it, SIGTERM as a management tool stops it, and the file the JVM writes at exit holds
 * the session's events with their fields.
 */
class ServeFlightRecordingTest {
    @TempDir
    Path dir;

    @Test
    void serveBlkRecordsItsSessionToTheFileNamedOnTheCommandLine() throws Exception {
        Path disk = dir.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(disk.toFile(), "rw")) {
            f.setLength(4 << 20);
        }
        Path socket = dir.resolve("blk.sock");
        Path jfr = dir.resolve("serve.jfr");
        Path log = dir.resolve("serve.log");
        Process serve = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-XX:StartFlightRecording:filename=" + jfr,
                "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "serve", "blk", "--blk-file=" + disk, "--socket-path=" + socket, "--queues", "2")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            String[] r = execute("drive", "blk", "--socket", socket.toString(), "--rw", "write", "--verify", "--bs", "4k",
                    "--size", "256k", "--queues", "2", "--connect-timeout", "60");
            assertEquals("0", r[0], () -> r[1] + "\nthe back-end's output:\n" + read(log));
            // The back-end releases the first connection on its own thread after the driver closed it, and events
            // emitted while the JVM shuts down may miss the recording it writes at exit (its shutdown hooks run
            // together). A second front-end is answered only once the first connection is released: then the first
            // one's events are all in.
            try (VhostUserFrontend second = VhostUserFrontend.connect(socket, Duration.ofSeconds(60))) {
                second.replyPatience(Duration.ofSeconds(60));
                assertTrue(second.getFeatures() != 0);
            }
            serve.destroy(); // SIGTERM: the JVM writes the recording as it exits
            assertTrue(serve.waitFor(60, TimeUnit.SECONDS), () -> "serve still runs after SIGTERM:\n" + read(log));
        } finally {
            serve.destroyForcibly().waitFor();
        }
        assertTrue(Files.size(jfr) > 0, () -> "no recording written:\n" + read(log));
        List<RecordedEvent> all = FlightRecording.read(jfr);
        String peer = socket + " #1";
        List<RecordedEvent> events = all.stream().filter(FlightRecording.on(peer)).toList(); // its control thread's

        assertEquals(peer, single(events, "FrontendConnected").getString("peer"));
        RecordedEvent gone = single(events, "FrontendDisconnected");
        assertEquals(peer, gone.getString("peer"));
        assertEquals("PEER_CLOSED", gone.getString("end"));
        RecordedEvent features = named(events, "FeaturesNegotiated").stream()
                .filter(e -> e.getString("request").equals("SET_FEATURES")).findFirst()
                .orElseThrow(() -> new AssertionError("no SET_FEATURES in " + events));
        long version1 = 1L << 32;
        assertEquals(version1, features.getLong("features") & version1, features::toString);
        assertEquals(0, features.getLong("features") & ~features.getLong("offeredFeatures"), features::toString);
        RecordedEvent table = single(events, "MemoryTableChanged");
        assertEquals("SET_MEM_TABLE", table.getString("request"));
        assertTrue(table.getInt("regions") >= 1 && table.getLong("totalBytes") > 0, table::toString);
        // both request queues started fresh and stopped when the driver closed the connection, where 256 KiB written
        // and read back in 4 KiB requests (128 requests) left them
        List<RecordedEvent> started = named(events, "RingStarted");
        assertEquals(List.of(0, 1), started.stream().map(e -> e.getInt("queue")).sorted().toList(), started::toString);
        for (RecordedEvent e : started) {
            assertEquals("split", e.getString("format"));
            assertEquals(0, e.getInt("nextAvail"));
        }
        List<RecordedEvent> stopped = named(events, "RingStopped");
        assertEquals(List.of(0, 1), stopped.stream().map(e -> e.getInt("queue")).sorted().toList(), stopped::toString);
        assertEquals(2 * 64, stopped.stream().mapToInt(e -> e.getInt("nextAvail")).sum(), stopped::toString);
        for (RecordedEvent e : stopped) {
            assertEquals("connection closed", e.getString("cause"));
            assertFalse(e.getBoolean("broken"), e::toString);
            assertEquals(e.getInt("nextAvail"), e.getInt("nextUsed"), e::toString);
        }
        assertTrue(named(all, "QueueBroken").isEmpty(), all::toString);
    }

    private static RecordedEvent single(List<RecordedEvent> events, String name) {
        List<RecordedEvent> of = named(events, name);
        assertEquals(1, of.size(), () -> name + ": " + of);
        return of.get(0);
    }

    private static String read(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
