package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.BlkDevice;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.LinuxException;
import io.virtio4j.testkit.Bytes;
import io.virtio4j.testkit.DiskImages;
import io.virtio4j.testkit.FlightRecording;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.frontend.DirtyLogging;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.VhostUserRequestFailedException;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.backend.InProcessBackend;
import jdk.jfr.FlightRecorder;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.testkit.FlightRecording.named;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JFR events of a vhost-user session's life, recorded in process around a real {@link BlkDevice} served on a
 * socket and driven by our front-end, read back from the dumped file as a user reads it: negotiation, the memory
 * table, the rings started and stopped (with their base), dirty logging switched on and off and its log, a request
 * refused, a reconnection that works and one that finds no back-end, a hostile ring that breaks its queue, and the
 * front-end coming and going. The traffic in between is checked (checksums): recording changes nothing of it.
 */
@ExtendWith(NoFdLeaks.class)
class BlkSessionEventsTest {
    private static final long DISK = 4L << 20;
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int QUEUE_SIZE = 16;
    private static final int BYTES = 4096;
    private static final int WRITES = 5;
    private static final long BIT30 = ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aSessionsLifeIsRecorded(RingFormat format) throws Exception {
        Path disk = DiskImages.sparse(dir.resolve("disk.img"), DISK);
        Path path = dir.resolve("blk.sock");
        List<RecordedEvent> all;
        long features;
        long protocolFeatures;
        long memoryBytes;
        long logBytes;
        long outside;
        long offered;
        String failure;
        try (FlightRecording recording = FlightRecording.start();
             BlockStore store = BlockStore.open(disk.toString(), false, 512);
             BlkDevice blk = new BlkDevice(store, new BlkDevice.Options(2, BlockEngine.SYNC, 16, 64, new int[0],
                     "events", NotificationMode.NOTIFY, 20_000))) {
            VhostUserBackendEndpoint endpoint = new VhostUserBackendEndpoint(
                    () -> new VhostUserSession(blk, BackendOptions.defaults()));
            Thread server = BackendThread.start(endpoint, path, false);
            BlkDriver.Config config = BlkDriver.Config.defaults().withQueues(2).withFormat(format).withDepth(8)
                    .withQueueSize(QUEUE_SIZE).withMaxRequestBytes(BYTES);
            try (BlkDriver d = BlkDriver.connect(path, config, TIMEOUT);
                 EventFd err = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
                FrontendSession session = d.session();
                offered = blk.features();
                features = d.negotiatedFeatures();
                protocolFeatures = session.protocolFeatures();
                memoryBytes = session.memory().size();
                writeAndReadBack(d, 0, 0);

                try (DirtyLogging logging = DirtyLogging.start(session)) {
                    logBytes = logging.log().byteSize();
                    writeAndReadBack(d, 0, 1);
                    logging.stop();
                }
                // a started ring cannot change size: refused with a failure REPLY_ACK, the connection goes on
                assertThrows(VhostUserRequestFailedException.class, () -> session.frontend().setVringNum(0, 8));

                d.reconnect(TIMEOUT);
                writeAndReadBack(d, 0, 2);

                // a descriptor beyond guest memory breaks queue 1, which tells through its error eventfd
                session.frontend().setVringErr(1, err);
                outside = session.memory().gpa(session.memory().size()) + 0x10000;
                d.addChain(1, d.acquire(1), new ScatterGather(1).readable(outside, 16));
                d.kick(1);
                long deadline = System.nanoTime() + TIMEOUT.toNanos();
                while (err.tryRead() == 0) {
                    assertTrue(System.nanoTime() - deadline < 0, "queue 1 did not break");
                    Thread.sleep(1);
                }
                session.stop();
                session.disconnect();
                endpoint.close();
                server.join(TIMEOUT.toMillis());
                assertFalse(server.isAlive(), "the endpoint did not stop");
                // nobody listens any more: an attempt that fails, as drive blk --reconnect makes them until one works
                LinuxException gone = assertThrows(LinuxException.class, () -> d.reconnect(Duration.ofMillis(300)));
                failure = gone.getClass().getName() + ": " + gone.getMessage();
            } finally {
                endpoint.close();
                server.join(TIMEOUT.toMillis());
            }
            all = recording.stop(dir.resolve("session.jfr"));
        }
        String socket = path.toString();
        List<RecordedEvent> ours = all.stream().filter(FlightRecording.on(socket)).toList();

        List<RecordedEvent> connected = named(ours, "FrontendConnected");
        assertEquals(List.of(socket + " #1", socket + " #2"), connected.stream().map(e -> e.getString("peer")).toList());
        List<RecordedEvent> disconnected = named(ours, "FrontendDisconnected");
        assertEquals(List.of(socket + " #1", socket + " #2"), disconnected.stream().map(e -> e.getString("peer")).toList());
        for (RecordedEvent e : disconnected) {
            assertEquals("PEER_CLOSED", e.getString("end"), e::toString);
            assertTrue(e.getLong("messages") > 20, e::toString); // negotiation and two rings' set-up at least
        }

        List<RecordedEvent> negotiated = named(ours, "FeaturesNegotiated");
        RecordedEvent protocol = negotiated.stream().filter(e -> e.getString("request").equals("SET_PROTOCOL_FEATURES"))
                .findFirst().orElseThrow(() -> new AssertionError("no SET_PROTOCOL_FEATURES in " + negotiated));
        assertEquals(protocolFeatures, protocol.getLong("protocolFeatures"));
        assertEquals(offered | BIT30, protocol.getLong("offeredFeatures"));
        assertEquals(protocolFeatures, protocol.getLong("offeredProtocolFeatures") & protocolFeatures);
        List<Long> set = negotiated.stream().filter(e -> e.getString("request").equals("SET_FEATURES"))
                .map(e -> e.getLong("features")).toList();
        long logAll = ProtocolFeatures.bit(ProtocolFeatures.VHOST_F_LOG_ALL);
        // each connection's start, and dirty logging's LOG_ALL on and off in between
        assertEquals(List.of(features, features | logAll, features, features), set);

        List<RecordedEvent> tables = named(ours, "MemoryTableChanged");
        assertEquals(2, tables.size(), tables::toString); // one per connection
        for (RecordedEvent e : tables) {
            assertEquals("SET_MEM_TABLE", e.getString("request"));
            assertEquals(1, e.getInt("regions"));
            assertEquals(memoryBytes, e.getLong("totalBytes"));
        }

        RecordedEvent logBase = single(ours, "LogBaseSet");
        assertEquals(logBytes, logBase.getLong("size"));
        assertEquals(0, logBase.getLong("offset"));
        assertFalse(logBase.getBoolean("logging"), "SET_LOG_BASE comes before LOG_ALL");
        assertEquals(List.of(true, false), named(ours, "DirtyLoggingSwitched").stream().map(e -> e.getBoolean("on")).toList());

        RecordedEvent rejected = single(ours, "RequestRejected");
        assertEquals("SET_VRING_NUM", rejected.getString("request"));
        assertEquals("index", rejected.getString("field"));
        assertEquals(0, rejected.getLong("value"));
        assertTrue(rejected.getString("message").contains("started"), rejected::toString);
        assertFalse(rejected.getBoolean("closed"));

        String formatName = format.name().toLowerCase(java.util.Locale.ROOT);
        List<RecordedEvent> started = named(ours, "RingStarted");
        for (RecordedEvent e : started) {
            assertEquals(formatName, e.getString("format"));
            assertEquals(QUEUE_SIZE, e.getInt("size"));
            assertTrue(e.getBoolean("inflight"), "the session asks for an inflight area by default: " + e);
        }
        // The first start of each connection: queue 0 resumes after the writes and reads done before (split: the avail
        // index; packed: the same position, one lap in QUEUE_SIZE); queue 1 is fresh.
        List<RecordedEvent> firstStarts = List.of(firstOf(started, 0, 0), firstOf(started, 1, 0));
        for (RecordedEvent e : firstStarts) {
            assertEquals(0, e.getInt("nextAvail"), e::toString);
            assertEquals(0, e.getInt("nextUsed"), e::toString);
            assertFalse(e.getBoolean("dirtyLogging"), e::toString);
        }
        assertTrue(started.stream().anyMatch(e -> e.getBoolean("dirtyLogging")), "rings restarted logging: " + started);
        int done = 2 * 2 * WRITES; // each round writes and reads WRITES requests
        RecordedEvent resumed = started.stream().filter(e -> e.getInt("queue") == 0
                        && e.getThread().getJavaName().endsWith("#2")).findFirst()
                .orElseThrow(() -> new AssertionError("queue 0 did not start on the second connection: " + started));
        assertEquals(done % (format == RingFormat.PACKED ? QUEUE_SIZE : 0x10000), resumed.getInt("nextAvail"), resumed::toString);
        assertEquals(resumed.getInt("nextAvail"), resumed.getInt("nextUsed"), "nothing was in flight: " + resumed);

        List<RecordedEvent> stopped = named(ours, "RingStopped");
        List<String> causes = stopped.stream().map(e -> e.getString("cause")).distinct().sorted().toList();
        assertTrue(causes.containsAll(List.of("SET_FEATURES", "SET_VRING_ADDR")), "logging switched: " + causes);
        RecordedEvent brokenStop = stopped.stream().filter(e -> e.getInt("queue") == 1 && e.getBoolean("broken"))
                .findFirst().orElseThrow(() -> new AssertionError("queue 1 did not stop broken: " + stopped));
        RecordedEvent lastStop0 = stopped.stream().filter(e -> e.getInt("queue") == 0).reduce((a, b) -> b).orElseThrow();
        assertFalse(lastStop0.getBoolean("broken"), lastStop0::toString);
        int finalDone = 3 * 2 * WRITES;
        assertEquals(finalDone % (format == RingFormat.PACKED ? QUEUE_SIZE : 0x10000), lastStop0.getInt("nextAvail"),
                lastStop0::toString);
        assertEquals(format == RingFormat.PACKED ? lastStop0.getLong("base") & 0x7FFF : lastStop0.getLong("base"),
                lastStop0.getInt("nextAvail"), lastStop0::toString);
        assertTrue(brokenStop.getStartTime().isAfter(firstOf(started, 1, 1).getStartTime()));

        // the break is reported by the queue's thread, not the control thread: picked out by what broke it
        List<RecordedEvent> broken = named(all, "QueueBroken").stream()
                .filter(e -> e.getString("message") != null && e.getString("message").contains(Long.toString(outside)))
                .toList();
        assertEquals(1, broken.size(), () -> "one break, reported once: " + named(all, "QueueBroken"));
        assertEquals(1, broken.get(0).getInt("queue"));
        assertEquals(AddressOutOfRangeException.class.getName(), broken.get(0).getString("exceptionType"));
        assertTrue(broken.get(0).getString("runner").startsWith("virtio4j-blk-q"), broken.get(0)::toString);

        List<RecordedEvent> reconnects = named(all, "Reconnected").stream()
                .filter(e -> socket.equals(e.getString("socket"))).toList();
        assertEquals(2, reconnects.size(), reconnects::toString);
        RecordedEvent worked = reconnects.get(0);
        assertTrue(worked.getBoolean("succeeded"), worked::toString);
        assertEquals(2, worked.getInt("rings"));
        assertTrue(worked.getBoolean("inflightArea"));
        assertEquals(0, worked.getLong("inFlight"));
        assertEquals(null, worked.getString("failure"));
        assertTrue(worked.getDuration().toNanos() > 0, worked::toString);
        RecordedEvent failed = reconnects.get(1);
        assertFalse(failed.getBoolean("succeeded"), failed::toString);
        assertEquals(1, failed.getLong("inFlight"), "the request on the broken ring: " + failed);
        assertEquals(failure, failed.getString("failure"));
    }

    /**
     * Without a recording the events cost nothing: a JVM that serves and drives a blk session in process, through
     * every emission point a session's life reaches, never starts Flight Recorder (its event classes stay the
     * uninstrumented ones, whose shouldCommit() is false and commit() empty, and no recorder thread or buffer exists).
     * Run in a JVM of its own: in this one another test may have started a recording.
     */
    @Test
    void aProcessThatRecordsNothingNeverStartsFlightRecorder() throws Exception {
        Path log = dir.resolve("unrecorded.log");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                Unrecorded.class.getName(), dir.toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the session did not end");
        } finally {
            p.destroyForcibly().waitFor();
        }
        String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("requests=" + 2 * WRITES + " flight-recorder-initialized=false recorder-threads=0"), out);
    }

    /** {@link #aProcessThatRecordsNothingNeverStartsFlightRecorder}'s JVM: a session's life, then whether JFR started. */
    static final class Unrecorded {
        public static void main(String[] args) throws Exception {
            Path disk = DiskImages.sparse(Path.of(args[0]).resolve("unrecorded.img"), DISK);
            try (BlockStore store = BlockStore.open(disk.toString(), false, 512);
                 BlkDevice blk = new BlkDevice(store, new BlkDevice.Options(2, BlockEngine.SYNC, 16, 64, new int[0],
                         "unrecorded", NotificationMode.NOTIFY, 20_000))) {
                InProcessBackend.Connected c = InProcessBackend.start(blk, "unrecorded");
                try (BlkDriver d = BlkDriver.start(FrontendSession.over(c.frontend()), BlkDriver.Config.defaults()
                        .withQueues(2).withDepth(8).withQueueSize(QUEUE_SIZE).withMaxRequestBytes(BYTES))) {
                    writeAndReadBack(d, 0, 0);
                    assertThrows(VhostUserRequestFailedException.class, () -> d.session().frontend().setVringNum(0, 8));
                    d.session().stop();
                } finally {
                    c.backend().awaitEnd();
                }
            }
            long recorderThreads = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith("JFR")).count(); // "JFR Recorder Thread", "JFR Periodic Tasks"
            System.out.println("requests=" + 2 * WRITES + " flight-recorder-initialized=" + FlightRecorder.isInitialized()
                    + " recorder-threads=" + recorderThreads);
        }
    }

    /** The first RingStarted of {@code queue} on connection {@code connection} (0: the first). */
    private static RecordedEvent firstOf(List<RecordedEvent> started, int queue, int connection) {
        String suffix = "#" + (connection + 1);
        return started.stream().filter(e -> e.getInt("queue") == queue && e.getThread().getJavaName().endsWith(suffix))
                .findFirst().orElseThrow(() -> new AssertionError("queue " + queue + " did not start on connection "
                        + suffix + ": " + started));
    }

    private static RecordedEvent single(List<RecordedEvent> events, String name) {
        List<RecordedEvent> of = named(events, name);
        assertEquals(1, of.size(), () -> name + ": " + of);
        return of.get(0);
    }

    /** {@link #WRITES} writes of random data on {@code queue}, each read back and checked. */
    private static void writeAndReadBack(BlkDriver d, int queue, int round) throws InterruptedException {
        SplittableRandom random = new SplittableRandom(round);
        for (int r = 0; r < WRITES; r++) {
            long sector = 8L * (round * WRITES + r);
            int slot = d.acquire(queue);
            MemorySegment data = d.data(queue, slot);
            for (int b = 0; b < BYTES; b += 8) {
                data.set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
            }
            long sum = Bytes.crc(data, 0, BYTES);
            d.write(queue, slot, sector, BYTES);
            assertEquals(BlkLayout.S_OK, d.run(queue, slot, TIMEOUT));
            slot = d.acquire(queue);
            d.data(queue, slot).fill((byte) 0);
            d.read(queue, slot, sector, BYTES);
            assertEquals(BlkLayout.S_OK, d.run(queue, slot, TIMEOUT));
            assertEquals(sum, Bytes.crc(d.data(queue, slot), 0, BYTES), "request " + r + " of round " + round);
        }
    }
}
