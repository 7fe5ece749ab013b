package io.virtio4j.devices.metrics;

import io.virtio4j.testkit.OpenFds;
import io.virtio4j.testkit.PrometheusExposition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The metrics endpoint: its addresses, and HTTP as a scraper and as a hostile client speak it. */
class MetricsServerTest {
    @TempDir
    Path dir;

    private final AtomicLong scrapes = new AtomicLong();

    private String exposition() {
        PrometheusText t = new PrometheusText();
        t.counter("virtio4j_scrapes_total", "Scrapes answered.").sample(scrapes.incrementAndGet(), "device", "test");
        return t.text();
    }

    /** Sends {@code request} as is, reads until the server closes; returns everything it answered. */
    static String exchange(SocketAddress address, String request) throws IOException {
        try (SocketChannel c = address instanceof UnixDomainSocketAddress
                ? SocketChannel.open(StandardProtocolFamily.UNIX) : SocketChannel.open()) {
            c.connect(address);
            c.write(ByteBuffer.wrap(request.getBytes(StandardCharsets.ISO_8859_1)));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteBuffer b = ByteBuffer.allocate(8192);
            while (c.read(b) >= 0) {
                out.write(b.array(), 0, b.position());
                b.clear();
            }
            return out.toString(StandardCharsets.UTF_8);
        }
    }

    /** The body of a 200 answer, its headers checked. */
    static String scrape(SocketAddress address) throws IOException {
        String r = exchange(address, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: text/plain\r\n\r\n");
        assertTrue(r.startsWith("HTTP/1.1 200 OK\r\n"), r);
        int end = r.indexOf("\r\n\r\n");
        String headers = r.substring(0, end);
        String body = r.substring(end + 4);
        assertTrue(headers.contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"), headers);
        assertTrue(headers.contains("\r\nContent-Length: " + body.getBytes(StandardCharsets.UTF_8).length), headers);
        assertTrue(headers.contains("\r\nConnection: close"), headers);
        return body;
    }

    @Test
    void aUnixSocketServesEachScrapeFreshAndGoesAwayOnClose() throws IOException {
        Path sock = dir.resolve("metrics.sock");
        SocketAddress address = MetricsServer.parse("unix:" + sock);
        try (MetricsServer m = MetricsServer.start(address, this::exposition)) {
            assertEquals("unix:" + sock, m.describe());
            assertEquals(1, PrometheusExposition.parse(scrape(address)).value("virtio4j_scrapes_total", "device", "test"));
            assertEquals(2, PrometheusExposition.parse(scrape(address)).value("virtio4j_scrapes_total"));
        }
        assertFalse(Files.exists(sock), "the socket file is removed on close");
    }

    @Test
    void aStaleSocketIsReplacedButARegularFileIsNot() throws IOException {
        Path sock = dir.resolve("metrics.sock");
        MetricsServer.start(MetricsServer.parse("unix:" + sock), this::exposition).close();
        // what a killed server leaves: a socket file nobody listens on
        try (var s = java.nio.channels.ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            s.bind(UnixDomainSocketAddress.of(sock));
        }
        assertTrue(Files.exists(sock));
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + sock), this::exposition)) {
            assertEquals(1, PrometheusExposition.parse(scrape(m.address())).value("virtio4j_scrapes_total"));
        }
        Path file = dir.resolve("data");
        Files.writeString(file, "keep me");
        assertThrows(java.io.UncheckedIOException.class,
                () -> MetricsServer.start(MetricsServer.parse("unix:" + file), this::exposition));
        assertEquals("keep me", Files.readString(file));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp:127.0.0.1:0", "tcp:localhost:0", "tcp:[::1]:0"})
    void aLoopbackPortServesToo(String spec) throws IOException {
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse(spec), this::exposition)) {
            InetSocketAddress bound = (InetSocketAddress) m.address();
            assertTrue(bound.getPort() > 0 && bound.getAddress().isLoopbackAddress(), m.describe());
            assertEquals(m.address(), MetricsServer.parse(m.describe()), "describe() reads back: " + m.describe());
            assertEquals(1, PrometheusExposition.parse(scrape(m.address())).value("virtio4j_scrapes_total"));
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "tcp:0.0.0.0:9100|tcp:0.0.0.0:9100: host 0.0.0.0 (0.0.0.0) is not a loopback address",
            "tcp:[::]:9100|tcp:[::]:9100: host :: (0:0:0:0:0:0:0:0) is not a loopback address",
            "tcp:127.0.0.1:65536|tcp:127.0.0.1:65536: port 65536 is not in [0, 65535]",
            "tcp:127.0.0.1:http|tcp:127.0.0.1:http: port http is not a number",
            "tcp:9100|tcp:9100: tcp:HOST:PORT needs a host and a port",
            "unix:|unix:: unix:PATH needs a path",
            "http://127.0.0.1:9100/metrics|http://127.0.0.1:9100/metrics: not unix:PATH or tcp:HOST:PORT"})
    void anAddressThatIsNoneOrNotLoopbackIsRefusedNamingIt(String spec, String message) {
        InvalidMetricsAddressException e = assertThrows(InvalidMetricsAddressException.class,
                () -> MetricsServer.parse(spec));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
        assertEquals(spec, e.value());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "GET / HTTP/1.1|HTTP/1.1 404 Not Found|path /: the metrics are at /metrics",
            "GET /metricsx HTTP/1.1|HTTP/1.1 404 Not Found|path /metricsx: ",
            "POST /metrics HTTP/1.1|HTTP/1.1 405 Method Not Allowed|method POST: GET or HEAD only",
            "GET /metrics HTTP/2.0|HTTP/1.1 505 HTTP Version Not Supported|version HTTP/2.0: ",
            "GET /metrics|HTTP/1.1 400 Bad Request|request line \"GET /metrics\" is not METHOD TARGET VERSION",
            "GARBAGE\u00e9|HTTP/1.1 400 Bad Request|request line \"GARBAGE?\" is not"})
    void anythingButAGetOfMetricsIsAnsweredWithItsStatusAndTheEndpointGoesOn(String line, String status,
                                                                             String says) throws IOException {
        Path sock = dir.resolve("m.sock");
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + sock), this::exposition)) {
            String r = exchange(m.address(), line + "\r\n\r\n");
            assertTrue(r.startsWith(status + "\r\n"), r);
            assertTrue(r.contains("\r\n\r\n" + says), r);
            assertEquals(1, PrometheusExposition.parse(scrape(m.address())).value("virtio4j_scrapes_total"));
        }
    }

    @Test
    void headAnswersTheHeadersAloneAndAQueryIsIgnored() throws IOException {
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + dir.resolve("m.sock")),
                this::exposition)) {
            String r = exchange(m.address(), "HEAD /metrics HTTP/1.0\r\n\r\n");
            assertTrue(r.startsWith("HTTP/1.1 200 OK\r\n") && r.endsWith("\r\n\r\n"), r);
            assertTrue(exchange(m.address(), "GET /metrics?name[]=x HTTP/1.1\n\n").contains("virtio4j_scrapes_total"));
        }
    }

    @Test
    void aRequestLargerThanTheLimitOrCutShortIsRefusedAndTheEndpointGoesOn() throws IOException {
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + dir.resolve("m.sock")),
                this::exposition)) {
            String huge = "GET /metrics HTTP/1.1\r\nX-Fill: " + "x".repeat(MetricsServer.REQUEST_BYTES) + "\r\n\r\n";
            assertTrue(exchange(m.address(), huge).startsWith("HTTP/1.1 400 Bad Request\r\n"));
            // a client that closes its side before the blank line
            try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                c.connect(m.address());
                c.write(ByteBuffer.wrap("GET /metr".getBytes(StandardCharsets.US_ASCII)));
                c.shutdownOutput();
                ByteBuffer b = ByteBuffer.allocate(4096);
                while (c.read(b) >= 0) {
                    assertTrue(b.hasRemaining());
                }
                assertTrue(new String(b.array(), 0, b.position(), StandardCharsets.US_ASCII)
                        .startsWith("HTTP/1.1 400 Bad Request\r\n"));
            }
            assertEquals(1, PrometheusExposition.parse(scrape(m.address())).value("virtio4j_scrapes_total"));
        }
    }

    @Test
    void anExpositionThatFailsIsAnsweredFiveHundredAndTheNextScrapeWorks() throws IOException {
        AtomicLong calls = new AtomicLong();
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + dir.resolve("m.sock")), () -> {
            if (calls.incrementAndGet() == 1) {
                throw new IllegalStateException("first scrape fails");
            }
            return exposition();
        })) {
            String r = exchange(m.address(), "GET /metrics HTTP/1.1\r\n\r\n");
            assertTrue(r.startsWith("HTTP/1.1 500 Internal Server Error\r\n") && r.contains("first scrape fails"), r);
            assertEquals(1, PrometheusExposition.parse(scrape(m.address())).value("virtio4j_scrapes_total"));
        }
    }

    /** Connects to {@code address} and sends nothing: a client that holds a connection idle. */
    private static SocketChannel idle(SocketAddress address) throws IOException {
        SocketChannel c = address instanceof UnixDomainSocketAddress
                ? SocketChannel.open(StandardProtocolFamily.UNIX) : SocketChannel.open();
        c.connect(address);
        return c;
    }

    /** Whether the server still holds {@code c} open and has answered nothing on it: a read finds no byte and no end. */
    private static boolean stillWaiting(SocketChannel c) throws IOException {
        c.configureBlocking(false);
        try {
            return c.read(ByteBuffer.allocate(1)) == 0;
        } finally {
            c.configureBlocking(true);
        }
    }

    /** Waits until {@code m} serves {@code clients} clients (polling: the server's threads are its own). */
    private static void awaitServing(MetricsServer m, int clients) throws InterruptedException {
        long giveUp = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30); // a hang guard only
        while (m.serving() != clients) {
            assertTrue(System.nanoTime() < giveUp, "serving " + m.serving() + " clients, not " + clients);
            Thread.sleep(1);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"unix", "tcp"})
    void aScrapeIsAnsweredWhileIdleClientsStayConnectedAndOneTooManyIsAnsweredBusy(String how)
            throws IOException, InterruptedException {
        String spec = how.equals("unix") ? "unix:" + dir.resolve("m.sock") : "tcp:127.0.0.1:0";
        List<SocketChannel> idle = new ArrayList<>();
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse(spec), this::exposition)) {
            for (int i = 0; i < MetricsServer.CLIENTS - 1; i++) {
                idle.add(idle(m.address()));
            }
            // one server thread serving one client at a time would reach this scrape only after each idle client's
            // deadline had passed and it had been answered 400 and closed
            assertEquals(1, PrometheusExposition.parse(scrape(m.address())).value("virtio4j_scrapes_total"));
            for (SocketChannel c : idle) {
                assertTrue(stillWaiting(c), "an idle client is still connected, unanswered, after the scrape");
            }
            // the scrape's slot is given back after the client read its answer: wait until only the idle ones hold one
            awaitServing(m, MetricsServer.CLIENTS - 1);
            idle.add(idle(m.address())); // the last client served at once
            awaitServing(m, MetricsServer.CLIENTS);
            String busy = exchange(m.address(), "GET /metrics HTTP/1.1\r\n\r\n");
            assertTrue(busy.startsWith("HTTP/1.1 503 Service Unavailable\r\n"), busy);
            assertTrue(busy.contains(MetricsServer.CLIENTS + " clients are being served"), busy);
            for (SocketChannel c : idle) {
                assertTrue(stillWaiting(c), "an idle client is still connected after the busy answer");
            }
        } finally {
            for (SocketChannel c : idle) {
                c.close();
            }
        }
    }

    /**
     * close() returns with every client thread's selector closed (an epoll and its wake-up eventfd, and through it the
     * connection's socket, which NIO closes only when the selector lets go of it), none left to a thread still ending
     * (a test after it would see them go: a fresh-clone CI run's BlkInflightReconnectTest did). Checked by the
     * eventfds: none opened since is open after close(). Epoll instances and sockets alone are not compared: the JDK
     * opens epolls of its own for the virtual threads' I/O, lazily, and keeps them, and a socket's close can be left
     * to a thread of the JDK's.
     */
    @Test
    void closeReturnsWithEveryDescriptorOfTheEndpointClosed() throws IOException, InterruptedException {
        Map<Integer, String> added = openAfterCloseWithServedClients();
        assertTrue(added.values().stream().noneMatch(target -> target.equals("anon_inode:[eventfd]")),
                "a selector of the endpoint is still open after close(): " + added);
    }

    /** Serves {@link MetricsServer#CLIENTS} idle clients, closes: the descriptors opened since, the clients' ends open. */
    private Map<Integer, String> openAfterCloseWithServedClients() throws IOException, InterruptedException {
        Map<Integer, String> before = OpenFds.snapshot();
        List<SocketChannel> idle = new ArrayList<>();
        try {
            MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + dir.resolve("m.sock")), this::exposition);
            for (int i = 0; i < MetricsServer.CLIENTS; i++) {
                idle.add(idle(m.address()));
            }
            awaitServing(m, MetricsServer.CLIENTS);
            m.close();
            Map<Integer, String> now = OpenFds.snapshot();
            now.entrySet().removeAll(before.entrySet());
            return now;
        } finally {
            for (SocketChannel c : idle) {
                c.close();
            }
        }
    }

    @Test
    void closeEndsTheConnectionsBeingServedWithoutAnswering() throws IOException {
        SocketChannel c;
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + dir.resolve("m.sock")),
                this::exposition)) {
            c = idle(m.address());
            // a scrape after it proves the server took the idle one (accepts come in order) before close()
            scrape(m.address());
        }
        try (c) {
            // blocks until the server's side is gone: waiting out the client deadline would answer 400 first
            ByteBuffer b = ByteBuffer.allocate(4096);
            int n;
            try {
                n = c.read(b);
            } catch (IOException reset) {
                n = -1;
            }
            assertEquals(-1, n, "nothing answered, the connection ended: "
                    + new String(b.array(), 0, b.position(), StandardCharsets.ISO_8859_1));
        }
    }

    @Test
    void aUnixSocketSomethingListensOnIsRefusedAsInUseAndKeepsServing() throws IOException {
        Path sock = dir.resolve("m.sock");
        try (MetricsServer m = MetricsServer.start(MetricsServer.parse("unix:" + sock), this::exposition)) {
            java.io.UncheckedIOException e = assertThrows(java.io.UncheckedIOException.class,
                    () -> MetricsServer.start(MetricsServer.parse("unix:" + sock), this::exposition));
            assertTrue(e.getMessage().contains("unix socket " + sock + " is in use"), e.getMessage());
            assertEquals(1, PrometheusExposition.parse(scrape(m.address())).value("virtio4j_scrapes_total"));
        }
    }
}
