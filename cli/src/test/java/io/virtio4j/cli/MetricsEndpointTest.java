package io.virtio4j.cli;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.driver.BlkDriver;
import io.virtio4j.devices.metrics.MetricsServer;
import io.virtio4j.devices.net.NetFeatures;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.devices.rng.RngDevice;
import io.virtio4j.devices.rng.RngSource;
import io.virtio4j.devices.worker.ChainWorker;
import io.virtio4j.testkit.BackendProcess;
import io.virtio4j.testkit.PrometheusExposition;
import io.virtio4j.vhost.frontend.DriverRing;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static io.virtio4j.cli.PeerRuns.field;
import static io.virtio4j.testkit.PrometheusExposition.with;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code serve net|blk --metrics}: a back-end started as a user starts it, traffic of known shape sent through it by
 * our drivers ({@link NetDriver}, {@link BlkDriver}, {@code drive blk}), and its endpoint scraped over a unix socket
 * and over loopback TCP: the exposition is valid text format 0.0.4 (checked line by line by
 * {@link PrometheusExposition}) and every traffic counter is exactly what was sent; the final summary the back-end
 * prints at SIGTERM says the same, from the same counters.
 */
class MetricsEndpointTest {
    private static final Duration PATIENCE = Duration.ofSeconds(30);
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);

    @TempDir
    Path dir;

    /** A back-end process and where its metrics are; closing stops it if it still runs. */
    private record Served(BackendProcess backend, Path socket, SocketAddress metrics) implements AutoCloseable {
        String stop() throws InterruptedException, IOException {
            return backend.stop();
        }

        @Override
        public void close() throws InterruptedException, IOException {
            backend.close();
        }
    }

    /** {@code serve <device> --socket ... --metrics <how> <options>}, once it says where its metrics are. */
    private Served serve(String device, String how, String... options) throws IOException, InterruptedException {
        Path socket = dir.resolve(device + ".sock");
        Path log = dir.resolve(device + ".log");
        String metrics = how.equals("unix") ? "unix:" + dir.resolve(device + "-metrics.sock") : "tcp:127.0.0.1:0";
        List<String> argv = new ArrayList<>(List.of(PeerRuns.cli().split(" ")));
        argv.addAll(List.of("serve", device, "--socket", socket.toString(), "--metrics", metrics));
        argv.addAll(List.of(options));
        BackendProcess p = BackendProcess.start(argv, log);
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (System.nanoTime() < deadline && p.process().isAlive()) {
            for (String line : Files.readAllLines(log)) {
                if (line.startsWith("metrics: ")) {
                    String at = line.substring("metrics: ".length(), line.indexOf(" (GET /metrics)"));
                    if (how.equals("unix")) {
                        assertEquals(metrics, at);
                    }
                    return new Served(p, socket, MetricsServer.parse(at));
                }
            }
            Thread.sleep(20);
        }
        p.process().destroyForcibly().waitFor();
        throw new AssertionError("serve " + device + " did not say where its metrics are:\n" + Files.readString(log));
    }

    /**
     * One scrape, parsed strictly. Over TCP with the JDK's HTTP client (a real HTTP/1.1 client); over the unix socket
     * by hand (that client has no unix sockets), checking the status line and headers the same way.
     */
    private static PrometheusExposition scrape(SocketAddress at) throws IOException, InterruptedException {
        String body;
        if (at instanceof InetSocketAddress tcp) {
            try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
                HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + tcp.getPort() + "/metrics")).timeout(Duration.ofSeconds(10)).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), r.body());
                assertEquals("text/plain; version=0.0.4; charset=utf-8", r.headers().firstValue("Content-Type").orElse(""));
                body = r.body();
            }
        } else {
            try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                c.connect(at);
                c.write(ByteBuffer.wrap("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                ByteBuffer b = ByteBuffer.allocate(16384);
                while (c.read(b) >= 0) {
                    out.write(b.array(), 0, b.position());
                    b.clear();
                }
                String r = out.toString(StandardCharsets.UTF_8);
                int end = r.indexOf("\r\n\r\n");
                assertTrue(r.startsWith("HTTP/1.1 200 OK\r\n") && end > 0, r);
                assertTrue(r.substring(0, end).contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"), r);
                body = r.substring(end + 4);
            }
        }
        PrometheusExposition e = PrometheusExposition.parse(body);
        for (PrometheusExposition.Family f : e.families().values()) {
            assertTrue(f.name().startsWith("virtio4j_"), f.name());
            assertTrue(!f.samples().isEmpty(), f.name() + " has no samples");
            for (PrometheusExposition.Sample s : f.samples()) {
                assertTrue(s.labels().containsKey("device"), f.name() + " " + s);
            }
        }
        return e;
    }

    /** Scrapes until {@code done} holds (the last pass's counts are folded just after its buffers went back). */
    private static PrometheusExposition scrapeUntil(SocketAddress at, Predicate<PrometheusExposition> done)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + WAIT_NANOS;
        PrometheusExposition e = scrape(at);
        while (!done.test(e)) {
            if (System.nanoTime() > deadline) {
                fail("the counters never reached the traffic sent: " + e.families());
            }
            Thread.sleep(20);
            e = scrape(at);
        }
        return e;
    }

    @ParameterizedTest
    @ValueSource(strings = {"net", "blk", "rng"})
    void aMetricsAddressThatIsRefusedIsOneLineNamingItBeforeAnythingIsServed(String device) {
        String vhost = dir.resolve("never.sock").toString();
        for (String[] bad : new String[][] {
                {"tcp:0.0.0.0:9100", "--metrics=tcp:0.0.0.0:9100: host 0.0.0.0 (0.0.0.0) is not a loopback address"},
                {"udp:127.0.0.1:1", "--metrics=udp:127.0.0.1:1: not unix:PATH or tcp:HOST:PORT"},
                // the vhost-user socket's own path, also written otherwise: binding it would take it from the back-end
                {"unix:" + dir.resolve(".").resolve("never.sock"), "--metrics=unix:" + dir.resolve(".")
                        .resolve("never.sock") + ": " + vhost + " is the vhost-user socket"}}) {
            List<String> args = new ArrayList<>(List.of("serve", device, "--socket", dir.resolve("never.sock").toString(),
                    "--metrics", bad[0]));
            if (device.equals("blk")) {
                args.addAll(List.of("--null", "1M"));
            }
            String[] r = CliRun.execute(args.toArray(String[]::new));
            assertEquals("2", r[0], r[1]);
            assertTrue(r[1].lines().findFirst().orElseThrow().startsWith(bad[1]), r[1]);
            assertTrue(!Files.exists(dir.resolve("never.sock")), "nothing listens");
        }
    }

    // ---- net ----

    private static final byte[] UNICAST_A = {0x02, 0, 0, 0, 0, 0x0a};
    private static final byte[] UNICAST_B = {0x02, 0, 0, 0, 0, 0x0b};
    private static final byte[] MULTICAST = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
    private static final byte[] MULTICAST6 = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
    private static final byte[] BROADCAST = {-1, -1, -1, -1, -1, -1};
    /**
     * Destination and source of each kind of frame sent: macswap gives the guest back the source as destination.
     * Sent: one kind broadcast, two multicast; back: two broadcast, one multicast (so a direction mixed up shows).
     */
    private static final byte[][][] KINDS = {
            {UNICAST_B, UNICAST_A}, {BROADCAST, UNICAST_A}, {MULTICAST, UNICAST_A}, {MULTICAST6, UNICAST_A},
            {UNICAST_B, MULTICAST6}, {UNICAST_B, BROADCAST}, {UNICAST_B, BROADCAST}};
    /** Frame lengths (Ethernet header on, no CRC) at both edges of DPDK's size bins, and their bins. */
    private static final int[] SIZES = {60, 64, 65, 127, 128, 255, 256, 511, 512, 1023, 1024, 1518, 1519, 1600};
    private static final int[] BINS = {0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
    private static final String[] BIN_NAMES = {"undersize_packets", "size_64_packets", "size_65_127_packets",
            "size_128_255_packets", "size_256_511_packets", "size_512_1023_packets", "size_1024_1518_packets",
            "size_1519_max_packets"};
    private static final int REPEATS = 3;

    /**
     * Whether a direction's frame counters show {@code frames} good frames with their bytes and size bins: a pass
     * folds its packets before its bytes and bins (FrameCounts.foldInto), so a scrape waiting on the packets alone
     * could land between the two.
     */
    private static boolean settled(PrometheusExposition x, String[] labels, long frames, long bytes, long[] bins) {
        if (x.value("virtio4j_good_packets_total", labels) != frames
                || x.value("virtio4j_good_bytes_total", labels) != bytes) {
            return false;
        }
        for (int b = 0; b < bins.length; b++) {
            if (x.value("virtio4j_" + BIN_NAMES[b] + "_total", labels) != bins[b]) {
                return false;
            }
        }
        return true;
    }

    /** The Ethernet header of one of the {@link #KINDS}: destination, source, a local experimental EtherType. */
    private static void writeHeader(MemorySegment frame, byte[][] kind) {
        frame.asSlice(0, 6).copyFrom(MemorySegment.ofArray(kind[0]));
        frame.asSlice(6, 6).copyFrom(MemorySegment.ofArray(kind[1]));
        frame.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 12, (short) 0x88B5);
    }

    @ParameterizedTest
    @ValueSource(strings = {"unix", "tcp"})
    void serveNetCountsExactlyTheFramesTheGuestSentAndGotBack(String how) throws Exception {
        try (Served served = serve("net", how, "--mode", "macswap", "--notify", "notify")) {
            int frames = KINDS.length * SIZES.length * REPEATS;
            long bytes = 0;
            long[] bins = new long[8];
            try (NetDriver g = NetDriver.start(VhostUserFrontend.connect(served.socket(), PATIENCE),
                    NetDriver.Config.defaults())) {
                MemorySegment frame = MemorySegment.ofArray(new byte[2048]);
                long[] received = new long[2]; // frames, bytes
                NetDriver.FrameHandler count = (f, length, numBuffers) -> {
                    received[0]++;
                    received[1] += length - NetFeatures.HDR_LEN;
                };
                g.postRx(0);
                int sent = 0;
                for (int r = 0; r < REPEATS; r++) {
                    for (byte[][] kind : KINDS) {
                        for (int s = 0; s < SIZES.length; s++) {
                            writeHeader(frame, kind);
                            assertTrue(g.send(0, frame, 0, SIZES[s]), "a free transmit slot");
                            bytes += SIZES[s];
                            bins[BINS[s]]++;
                            sent++;
                        }
                        // one kind at a time, every echo received before the next: the receive ring never runs out
                        g.kickTx(0);
                        long deadline = System.nanoTime() + WAIT_NANOS;
                        while (received[0] < sent) {
                            assertTrue(System.nanoTime() < deadline, "echoes received: " + received[0] + " of " + sent);
                            g.reapTx(0);
                            if (g.receive(0, count) > 0) {
                                g.postRx(0);
                            } else {
                                g.awaitRx(0, 10_000_000);
                            }
                        }
                    }
                }
                assertEquals(bytes, received[1], "bytes echoed");
            }
            long expectedBytes = bytes;
            // direction in DPDK's sense, the back-end's: rx on the guest's transmit queue (1), tx on its receive queue (0)
            String[] toGuest = {"device", "net", "queue", "0", "qp", "0", "direction", "tx"};
            String[] fromGuest = {"device", "net", "queue", "1", "qp", "0", "direction", "rx"};
            PrometheusExposition e = scrapeUntil(served.metrics(), x -> settled(x, toGuest, frames, expectedBytes, bins)
                    && settled(x, fromGuest, frames, expectedBytes, bins));
            for (String[] q : new String[][] {{"0", "tx"}, {"1", "rx"}}) {
                // packets, bytes and size bins: settled above
                String[] labels = {"device", "net", "queue", q[0], "qp", "0", "direction", q[1]};
                assertEquals(0, e.value("virtio4j_dropped_packets_total", labels), "drops " + q[1]);
                assertTrue(e.value("virtio4j_guest_notifications_total", labels)
                        + e.value("virtio4j_guest_notifications_suppressed_total", labels) > 0, "a decision on " + q[1]);
            }
            long perKind = (long) SIZES.length * REPEATS;
            // sent by the guest: one kind broadcast, two multicast; given back: two broadcast, one multicast
            assertEquals(perKind, e.value("virtio4j_broadcast_packets_total", "direction", "rx"));
            assertEquals(2 * perKind, e.value("virtio4j_multicast_packets_total", "direction", "rx"));
            assertEquals(2 * perKind, e.value("virtio4j_broadcast_packets_total", "direction", "tx"));
            assertEquals(perKind, e.value("virtio4j_multicast_packets_total", "direction", "tx"));
            assertTrue(e.value("virtio4j_kicks_total", "queue", "1", "direction", "rx") > 0, "the guest kicked");
            // the reflector modes never wait in epoll for the tap: only the tap mode counts wake-ups
            assertEquals(0, e.value("virtio4j_wakeups_total", "device", "net", "qp", "0"));
            assertEquals(Map.of("device", "net", "queue", "0", "qp", "0", "direction", "tx"),
                    e.families().get("virtio4j_receive_ring_empty_total").samples().get(0).labels());
            // the summary at SIGTERM comes from the same counters
            String log = served.stop();
            String result = log.lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow(() ->
                    new AssertionError("no RESULT line:\n" + log));
            assertEquals(frames, field(result, "RX-packets"), result);
            assertEquals(expectedBytes, field(result, "RX-bytes"), result);
            assertEquals(frames, field(result, "TX-packets"), result);
            assertTrue(log.contains("final pair 0: from-guest packets=" + frames + " bytes=" + expectedBytes
                    + " drops=0 multicast=" + 2 * perKind + " broadcast=" + perKind), log);
        }
    }

    /**
     * rxonly reads a dropped frame in place, its destination word and no more: every kind and size the guest sends,
     * in one descriptor and in two (header apart: a chain, gathered), is counted by destination and size exactly, a
     * broadcast source (octets 6-11 all ones) included, which must not make a unicast frame broadcast; the shortest
     * frame counted (an Ethernet header alone, 14 bytes) is read, and runts one byte shorter or of one byte are
     * dropped unread.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void serveNetRxonlyCountsEachFrameByDestinationAndSizeInPlace(int txSegments) throws Exception {
        // SIZES and BINS with the shortest frame counted in front: an Ethernet header alone, undersize
        int[] sizes = new int[SIZES.length + 1];
        int[] sizeBins = new int[BINS.length + 1];
        sizes[0] = NetFeatures.ETH_HEADER;
        System.arraycopy(SIZES, 0, sizes, 1, SIZES.length);
        System.arraycopy(BINS, 0, sizeBins, 1, BINS.length);
        int[] runts = {NetFeatures.ETH_HEADER - 1, 1};
        try (Served served = serve("net", "unix", "--mode", "rxonly", "--notify", "notify")) {
            int frames = KINDS.length * sizes.length * REPEATS;
            long bytes = 0;
            long[] bins = new long[8];
            try (NetDriver g = NetDriver.start(VhostUserFrontend.connect(served.socket(), PATIENCE),
                    NetDriver.Config.defaults().withTxSegments(txSegments))) {
                MemorySegment frame = MemorySegment.ofArray(new byte[2048]);
                long deadline = System.nanoTime() + WAIT_NANOS;
                for (int r = 0; r <= REPEATS; r++) {
                    for (byte[][] kind : KINDS) {
                        writeHeader(frame, kind);
                        // the runts last (a round of its own): their drops are the last counts folded
                        int[] lengths = r < REPEATS ? sizes : runts;
                        for (int s = 0; s < lengths.length; s++) {
                            while (!g.send(0, frame, 0, lengths[s])) { // the ring is full: take back what was used
                                assertTrue(System.nanoTime() < deadline, "transmit slots freed");
                                g.kickTx(0);
                                if (g.reapTx(0) == 0) {
                                    g.awaitTx(0, 10_000_000);
                                }
                            }
                            if (r < REPEATS) {
                                bytes += sizes[s];
                                bins[sizeBins[s]]++;
                            }
                        }
                        g.kickTx(0);
                    }
                }
                while (g.txInFlight(0) > 0) {
                    assertTrue(System.nanoTime() < deadline, "frames used: " + g.txInFlight(0) + " left");
                    if (g.reapTx(0) == 0) {
                        g.awaitTx(0, 10_000_000);
                    }
                }
            }
            long expectedBytes = bytes;
            long drops = (long) KINDS.length * runts.length;
            // direction in DPDK's sense: rx on the guest's transmit queue (1)
            String[] labels = {"device", "net", "queue", "1", "qp", "0", "direction", "rx"};
            PrometheusExposition e = scrapeUntil(served.metrics(), x -> settled(x, labels, frames, expectedBytes, bins)
                    && x.value("virtio4j_dropped_packets_total", labels) == drops);
            long perKind = (long) sizes.length * REPEATS;
            assertEquals(perKind, e.value("virtio4j_broadcast_packets_total", labels));
            assertEquals(2 * perKind, e.value("virtio4j_multicast_packets_total", labels));
            assertEquals(0, e.value("virtio4j_good_packets_total", "direction", "tx"), "nothing goes back");
        }
    }

    // ---- blk ----

    private static int one(BlkDriver d, java.util.function.IntConsumer prepare) throws InterruptedException {
        int slot = d.acquire(0);
        assertTrue(slot >= 0, "a free slot");
        prepare.accept(slot);
        return d.run(0, slot, PATIENCE);
    }

    @ParameterizedTest
    @ValueSource(strings = {"unix", "tcp"})
    void serveBlkCountsEveryRequestByTypeBytesAndStatus(String how) throws Exception {
        long capacity = 16L << 20;
        try (Served served = serve("blk", how, "--null", Long.toString(capacity))) {
            int writes = 5;
            int reads = 3;
            int flushes = 2;
            try (BlkDriver d = BlkDriver.connect(served.socket(), BlkDriver.Config.defaults().withDepth(4)
                    .withMaxRequestBytes(64 << 10), PATIENCE)) {
                for (int i = 0; i < writes; i++) {
                    int sector = i * 8;
                    assertEquals(BlkLayout.S_OK, one(d, slot -> d.write(0, slot, sector, 4096)));
                }
                for (int i = 0; i < reads; i++) {
                    int sector = i * 16;
                    assertEquals(BlkLayout.S_OK, one(d, slot -> d.read(0, slot, sector, 8192)));
                }
                for (int i = 0; i < flushes; i++) {
                    assertEquals(BlkLayout.S_OK, one(d, slot -> d.flush(0, slot)));
                }
                assertEquals(BlkLayout.S_OK, one(d, slot -> d.getId(0, slot)));
                // past the end: refused before any I/O, IOERR
                assertEquals(BlkLayout.S_IOERR, one(d, slot -> d.read(0, slot, capacity / BlkLayout.SECTOR, 4096)));
                // a type nobody knows: UNSUPP
                assertEquals(BlkLayout.S_UNSUPP, one(d, slot -> {
                    MemorySegment data = d.data(0, slot);
                    data.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), BlkLayout.HEADER_TYPE, 0x42);
                    data.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), BlkLayout.HEADER_RESERVED, 0);
                    data.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), BlkLayout.HEADER_SECTOR, 0);
                    d.addChain(0, slot, new ScatterGather(2).readable(d.dataAddress(0, slot), BlkLayout.HEADER_BYTES)
                            .writable(d.statusAddress(0, slot), BlkLayout.STATUS_BYTES));
                }));
            }
            // drive blk, one pass over 256 KiB in 4 KiB requests: 64, reads and writes at random
            List<String> argv = new ArrayList<>(List.of(PeerRuns.cli().split(" ")));
            argv.addAll(List.of("drive", "blk", "--socket", served.socket().toString(), "--rw", "randrw", "--bs", "4k",
                    "--size", "256k", "--iodepth", "8"));
            Path driveLog = dir.resolve("drive.log");
            Process drive = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(driveLog.toFile()).start();
            if (!drive.waitFor(60, TimeUnit.SECONDS)) {
                drive.destroyForcibly().waitFor();
                fail("drive blk did not end:\n" + Files.readString(driveLog));
            }
            String driveOut = Files.readString(driveLog);
            assertEquals(0, drive.exitValue(), driveOut);
            String driven = driveOut.lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow();
            long driveReads = field(driven, "read-requests");
            long driveWrites = field(driven, "write-requests");
            assertEquals(64, driveReads + driveWrites, driven);

            long requests = writes + reads + flushes + 1 + 1 + 1 + 64;
            PrometheusExposition e = scrapeUntil(served.metrics(),
                    x -> x.sum("virtio4j_blk_requests_total") == requests);
            String[] q0 = {"device", "blk", "queue", "0", "direction", "request"};
            assertEquals(reads + driveReads, e.value("virtio4j_blk_requests_total", with(q0, "type", "read")));
            assertEquals(writes + driveWrites, e.value("virtio4j_blk_requests_total", with(q0, "type", "write")));
            assertEquals(flushes, e.value("virtio4j_blk_requests_total", with(q0, "type", "flush")));
            assertEquals(1, e.value("virtio4j_blk_requests_total", with(q0, "type", "get_id")));
            assertEquals(0, e.value("virtio4j_blk_requests_total", with(q0, "type", "discard")));
            assertEquals(0, e.value("virtio4j_blk_requests_total", with(q0, "type", "write_zeroes")));
            assertEquals(2, e.value("virtio4j_blk_requests_total", with(q0, "type", "refused")));
            assertEquals((reads * 8192L) + driveReads * 4096, e.value("virtio4j_blk_read_bytes_total", q0));
            assertEquals((writes * 4096L) + driveWrites * 4096, e.value("virtio4j_blk_written_bytes_total", q0));
            assertEquals(0, e.value("virtio4j_blk_errors_total", with(q0, "status", "ioerr", "cause", "io")));
            assertEquals(1, e.value("virtio4j_blk_errors_total", with(q0, "status", "ioerr", "cause", "invalid")));
            assertEquals(1, e.value("virtio4j_blk_errors_total", with(q0, "status", "unsupp", "cause", "unsupported")));
            assertEquals(0, e.value("virtio4j_blk_errors_total", with(q0, "status", "none", "cause", "malformed")));
            // every read, write and flush went through the engine (writeback negotiated: no write-through flushes)
            long operations = reads + driveReads + writes + driveWrites + flushes
                    + e.value("virtio4j_blk_writethrough_syncs_total", q0);
            assertEquals(operations, e.value("virtio4j_inflight_submitted_total", q0));
            assertEquals(operations, e.value("virtio4j_inflight_completed_total", q0));
            assertTrue(e.value("virtio4j_kicks_total", q0) > 0, "the driver kicked");
            assertTrue(e.value("virtio4j_guest_notifications_total", q0) > 0, "the driver was notified");
            String log = served.stop();
            String result = log.lines().filter(l -> l.startsWith("RESULT ")).findFirst().orElseThrow(() ->
                    new AssertionError("no RESULT line:\n" + log));
            assertEquals(requests, field(result, "requests"), result);
            assertEquals(reads + driveReads, field(result, "reads"), result);
            assertEquals(1, field(result, "invalid"), result);
            assertEquals(1, field(result, "unsupported"), result);
        }
    }
    // ---- rng ----

    /**
     * serve rng has no driver command: the front-end library posts buffers of several lengths one at a time (the next
     * only once the last came back), so each pass of the queue thread gives back exactly one buffer and makes one
     * notification decision. The bytes are the seeded stream's, in order; the counters add up to what was posted.
     */
    @ParameterizedTest
    @ValueSource(strings = {"unix", "tcp"})
    void serveRngCountsEveryBufferItsBytesAndTheNotifications(String how) throws Exception {
        int[] lengths = {1, 64, 4096, RngDevice.MAX_BYTES_PER_BUFFER, RngDevice.MAX_BYTES_PER_BUFFER + 4096, 7};
        long bytes = 0;
        try (Served served = serve("rng", how, "--seed", "11")) {
            try (FrontendSession s = FrontendSession.connect(served.socket(), PATIENCE);
                 Arena a = Arena.ofConfined()) {
                long version1 = VirtioFeatures.bit(VirtioFeatures.VERSION_1);
                s.negotiate(version1, version1, FrontendSession.PROTOCOL_FEATURES, 0, 1);
                s.attach(GuestMemory.create("serve-rng-metrics", 1 << 20));
                DriverRing ring = s.addRing(RingFormat.SPLIT, 16, 0, DriverOptions.defaults(), true);
                s.start();
                long total = 0;
                for (int len : lengths) {
                    total += Math.min(len, RngDevice.MAX_BYTES_PER_BUFFER);
                }
                MemorySegment want = a.allocate(total);
                RngSource.seed(11).fill(want, total);
                for (int len : lengths) {
                    MemorySegment buffer = s.memory().carveSegment(len, 64);
                    ring.queue().add(new ScatterGather(1).writable(s.memory().gpa(buffer), len), "buffer");
                    // A kick whatever the device's flags say (it asks for kicks only before it sleeps, so kick()
                    // could send none at all): every one is read, some perhaps together (an eventfd adds them up).
                    ring.queue().kickPrepare();
                    ring.queue().notifyDevice();
                    long deadline = System.nanoTime() + WAIT_NANOS; // a hang guard
                    while (ring.queue().pollUsed() == null) {
                        assertTrue(System.nanoTime() - deadline < 0, "buffer of " + len + " bytes not given back");
                        ring.await(TimeUnit.MILLISECONDS.toNanos(100));
                    }
                    long got = ring.queue().lastUsedLength();
                    assertEquals(Math.min(len, RngDevice.MAX_BYTES_PER_BUFFER), got);
                    assertEquals(-1, want.asSlice(bytes, got).mismatch(buffer.asSlice(0, got)),
                            "the stream's next " + got + " bytes");
                    bytes += got;
                }
            }
            long buffers = lengths.length;
            long sent = bytes;
            String[] q0 = {"device", "rng", "queue", "0", "direction", "request"};
            // A pass counts its buffers before it publishes them and its notification decision after; a kick pending
            // in the eventfd is counted when the thread reads it: wait for all three.
            PrometheusExposition e = scrapeUntil(served.metrics(), x -> x.value(ChainWorker.USED_BUFFERS, q0) == buffers
                    && decisions(x, q0) >= buffers && x.value("virtio4j_kicks_total", q0) >= 1);
            assertEquals(sent, e.value(ChainWorker.USED_BYTES, q0));
            assertEquals(buffers, decisions(e, q0), "one notification decision a buffer: one buffer a pass");
            long kicks = e.value("virtio4j_kicks_total", q0);
            assertTrue(kicks <= buffers, "kicks " + kicks + ", more than the " + buffers + " sent");
            String log = served.stop();
            assertTrue(log.contains("RESULT role=virtio4j buffers=" + buffers + " bytes=" + sent), log);
        }
    }

    /** Used-buffer notifications sent plus suppressed: the notification decisions made. */
    private static long decisions(PrometheusExposition e, String[] labels) {
        return e.value("virtio4j_guest_notifications_total", labels)
                + e.value("virtio4j_guest_notifications_suppressed_total", labels);
    }
}
