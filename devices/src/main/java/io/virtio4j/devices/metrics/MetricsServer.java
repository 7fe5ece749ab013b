package io.virtio4j.devices.metrics;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A small HTTP/1.1 server answering {@code GET /metrics} with what {@code exposition} returns (the Prometheus text
 * format, {@link PrometheusText}), on a unix socket or a TCP port. One daemon thread accepts; each connection is
 * served on a virtual thread of its own, so a slow or idle client never holds up another's scrape, and gets one answer
 * and is closed ({@code Connection: close}). At most {@link #CLIENTS} are served at once: one more is answered 503 at
 * once and closed (and past as many answered so, closed unanswered), so idle connections take a bounded number of
 * sockets and threads.
 *
 * <p>It never holds up a queue thread: the exposition reads counters ({@link Counters}) without waiting for their
 * writers. A client is hostile like anything else that comes from outside: its request is read within
 * {@link #REQUEST_BYTES} bytes and {@link #CLIENT_MILLIS} milliseconds, and the answer written within the same time,
 * or it is answered 400 (or, for the answer, dropped); anything but a well-formed GET or HEAD of {@code /metrics} is
 * answered with its status (400, 404, 405, 505) and closed.
 *
 * <p>TCP only on a loopback address ({@link #parse}): the endpoint has no authentication and no TLS, so reaching it
 * from elsewhere is a choice to make outside (a reverse proxy, an SSH tunnel, a unix socket a collector reads).
 * A library user who binds another address with {@link #start} makes that choice himself.
 */
public final class MetricsServer implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(MetricsServer.class.getName());
    /** The most bytes of a request (line and headers) read; a longer one is answered 400 and closed. */
    static final int REQUEST_BYTES = 8192;
    /** The most bytes read after answering, waiting for the client to close (see {@link #serve}). */
    private static final long DRAIN_BYTES = 1 << 20;
    /**
     * How long a client has to send its request, and then to take the answer: a scraper sends its request at once
     * and reads the answer (a few KiB) at once, and Prometheus' default scrape timeout is 10 s.
     */
    static final long CLIENT_MILLIS = 2_000;
    /** The most clients served at once; one more is answered 503 at once. */
    static final int CLIENTS = 8;

    private final ServerSocketChannel server;
    private final SocketAddress address;
    private final Path socketFile;
    private final Supplier<String> exposition;
    private final Thread thread;
    /** Permits for the clients served now ({@link #CLIENTS}). */
    private final Semaphore slots = new Semaphore(CLIENTS);
    /** Permits for the clients being answered 503 now, as many. */
    private final Semaphore busySlots = new Semaphore(CLIENTS);
    /** The connections served now, with the selector their thread waits in, closed at once by {@link #close}. */
    private final Map<SocketChannel, Selector> live = new ConcurrentHashMap<>();
    /**
     * Every client thread started and not yet ended, joined by {@link #close}: a thread closes its selector (an epoll
     * and an eventfd) and, through it, its connection's socket (NIO closes a registered channel's descriptor only
     * when its selector lets go of it) as it ends, so close() returning before them would leave four descriptors
     * open a moment longer than the endpoint (a fresh-clone CI run's descriptor check of the next test saw them go).
     */
    private final Set<Thread> clientThreads = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private MetricsServer(ServerSocketChannel server, Path socketFile, Supplier<String> exposition) throws IOException {
        this.server = server;
        this.address = server.getLocalAddress();
        this.socketFile = socketFile;
        this.exposition = exposition;
        this.thread = new Thread(this::serve, "virtio4j-metrics");
        this.thread.setDaemon(true); // never keeps the process alive
    }

    /**
     * Parses {@code unix:PATH} or {@code tcp:HOST:PORT} (HOST a loopback name or address: {@code 127.0.0.1},
     * {@code [::1]}, {@code localhost}; PORT 0 for one the kernel picks).
     *
     * @throws InvalidMetricsAddressException naming the value and what is wrong with it
     */
    public static SocketAddress parse(String spec) {
        if (spec.startsWith("unix:")) {
            String path = spec.substring("unix:".length());
            if (path.isEmpty() || path.indexOf('\0') >= 0) {
                throw new InvalidMetricsAddressException(spec, "unix:PATH needs a path");
            }
            return UnixDomainSocketAddress.of(path);
        }
        if (!spec.startsWith("tcp:")) {
            throw new InvalidMetricsAddressException(spec, "not unix:PATH or tcp:HOST:PORT");
        }
        String hostPort = spec.substring("tcp:".length());
        int colon = hostPort.lastIndexOf(':');
        if (colon <= 0) {
            throw new InvalidMetricsAddressException(spec, "tcp:HOST:PORT needs a host and a port");
        }
        String host = hostPort.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new InvalidMetricsAddressException(spec, "port " + hostPort.substring(colon + 1) + " is not a number");
        }
        if (port < 0 || port > 65535) {
            throw new InvalidMetricsAddressException(spec, "port " + port + " is not in [0, 65535]");
        }
        InetAddress ip;
        try {
            ip = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new InvalidMetricsAddressException(spec, "host " + host + " is unknown");
        }
        if (!ip.isLoopbackAddress()) {
            throw new InvalidMetricsAddressException(spec, "host " + host + " (" + ip.getHostAddress() + ") is not a "
                    + "loopback address: the endpoint has no authentication; serve it on 127.0.0.1 or a unix socket "
                    + "and forward it (reverse proxy, SSH tunnel)");
        }
        return new InetSocketAddress(ip, port);
    }

    /**
     * Binds {@code address} (a unix socket: a stale socket file there, one nobody listens on, is removed first; one
     * a live server listens on is refused as in use; a regular file is not removed, and the bind fails) and serves
     * {@code exposition} on a new daemon thread.
     *
     * @throws UncheckedIOException when the address cannot be bound or is a unix socket in use
     */
    public static MetricsServer start(SocketAddress address, Supplier<String> exposition) {
        ServerSocketChannel server = null;
        Path socketFile = null;
        try {
            if (address instanceof UnixDomainSocketAddress unix) {
                socketFile = unix.getPath();
                if (Files.exists(socketFile) && !Files.isRegularFile(socketFile) && !Files.isDirectory(socketFile)) {
                    if (listening(unix)) {
                        // another endpoint (or anything else) serves there: taking the path over would leave it
                        // running unreachable
                        throw new IOException("unix socket " + socketFile + " is in use: something listens on it");
                    }
                    Files.delete(socketFile); // what a killed server left
                }
                server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            } else {
                server = ServerSocketChannel.open();
            }
            server.bind(address, 16);
            MetricsServer m = new MetricsServer(server, socketFile, exposition);
            m.thread.start();
            return m;
        } catch (IOException e) {
            if (server != null) {
                try {
                    server.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw new UncheckedIOException("metrics endpoint " + describe(address) + ": " + e.getMessage(), e);
        }
    }

    /** The clients being served now (not counting those answered 503): for tests, which cannot see threads. */
    int serving() {
        return CLIENTS - slots.availablePermits();
    }

    /** Whether something accepts connections on {@code unix}: a connect succeeds (refused: a stale file). */
    private static boolean listening(UnixDomainSocketAddress unix) {
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.connect(unix);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The address bound (a TCP port 0 resolved to the port the kernel picked). */
    public SocketAddress address() {
        return address;
    }

    /** The bound address as {@link #parse} reads it: {@code unix:PATH} or {@code tcp:HOST:PORT}. */
    public String describe() {
        return describe(address);
    }

    private static String describe(SocketAddress a) {
        if (a instanceof UnixDomainSocketAddress u) {
            return "unix:" + u.getPath();
        }
        InetSocketAddress i = (InetSocketAddress) a;
        String host = i.getAddress() == null ? i.getHostString() : i.getAddress().getHostAddress();
        return "tcp:" + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + i.getPort();
    }

    /**
     * Stops serving: closes the listening socket and every connection being served (their threads end at once), waits
     * for the accepting thread and removes the unix socket file.
     */
    @Override
    public void close() {
        closed = true; // before closing clients: a client accepted now is closed by its own thread (serveClient)
        try {
            server.close(); // ends a blocking accept with AsynchronousCloseException
            live.forEach((c, selector) -> {
                // Closing a channel only cancels its key; the wake-up ends its thread's select now rather than at
                // its deadline, and the thread's next read or write fails on the closed channel.
                closeQuietly(c);
                selector.wakeup();
            });
            thread.join(CLIENT_MILLIS);
            // The accepting thread has ended: no client thread starts from here on. Each one left was woken above, or
            // finds closed set (serveClient), and ends at once.
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLIENT_MILLIS);
            for (Thread t : clientThreads) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || !t.join(Duration.ofNanos(left))) {
                    LOG.warning("metrics endpoint " + describe() + ": a client thread did not end within "
                            + CLIENT_MILLIS + " ms of close");
                    break;
                }
            }
            if (socketFile != null) {
                Files.deleteIfExists(socketFile);
            }
        } catch (IOException e) {
            LOG.warning("metrics endpoint " + describe() + ": closing: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void serve() {
        while (true) {
            SocketChannel client;
            try {
                client = server.accept();
            } catch (ClosedChannelException e) {
                return; // closed
            } catch (IOException e) {
                LOG.warning("metrics endpoint " + describe() + ": accept failed, no more scrapes: " + e);
                return;
            }
            // A client past the limit is still answered (503) and closed gently, on a thread of its own bounded the
            // same way; past that too it is closed unanswered, so a flood of connections costs a bounded number of
            // threads and descriptors.
            boolean served = slots.tryAcquire();
            Semaphore held = served ? slots : busySlots.tryAcquire() ? busySlots : null;
            if (held == null) {
                closeQuietly(client);
                continue;
            }
            try {
                Thread t = Thread.ofVirtual().name("virtio4j-metrics-client").unstarted(() -> {
                    try {
                        serveClient(client, served ? null : busy());
                    } finally {
                        held.release();
                        clientThreads.remove(Thread.currentThread());
                    }
                });
                clientThreads.add(t);
                try {
                    t.start();
                } catch (RuntimeException | OutOfMemoryError e) {
                    clientThreads.remove(t);
                    throw e;
                }
            } catch (RuntimeException | OutOfMemoryError e) {
                held.release();
                closeQuietly(client);
                LOG.log(Level.FINE, "metrics endpoint " + describe() + ": no thread for a client", e);
            }
        }
    }

    /** The answer to one client too many, given without reading its request. */
    private static ByteBuffer busy() {
        return response(503, "Service Unavailable", CLIENTS + " clients are being served; try again\n", false);
    }

    /** Answers {@code client}: its request, or with {@code preset} when given (without reading the request). */
    private void serveClient(SocketChannel client, ByteBuffer preset) {
        try (client; Selector selector = Selector.open()) {
            live.put(client, selector);
            if (closed) {
                return; // close() ran between accept and here, and may have missed this client
            }
            client.configureBlocking(false);
            SelectionKey key = client.register(selector, SelectionKey.OP_READ);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLIENT_MILLIS);
            ByteBuffer answer = preset != null ? preset : answer(readRequest(client, selector, deadline));
            key.interestOps(SelectionKey.OP_WRITE);
            while (answer.hasRemaining()) {
                if (client.write(answer) == 0 && !await(selector, deadline)) {
                    break; // the client does not read: dropped
                }
            }
            // Close gently: end our side, then take what the client still sends (the rest of a request too large to
            // read) until it closes. Closing with unread bytes would reset the connection, and the client could
            // lose the answer before reading it.
            client.shutdownOutput();
            key.interestOps(SelectionKey.OP_READ);
            ByteBuffer sink = ByteBuffer.allocate(REQUEST_BYTES);
            for (long drained = 0; drained < DRAIN_BYTES; drained += sink.position(), sink.clear()) {
                int n = client.read(sink);
                if (n < 0 || (n == 0 && !await(selector, deadline))) {
                    break;
                }
            }
        } catch (IOException | RuntimeException e) {
            // one client's trouble (reset, an exposition that failed, close()) never ends the endpoint
            LOG.log(Level.FINE, "metrics endpoint " + describe() + ": a scrape failed", e);
        } finally {
            live.remove(client);
        }
    }

    private static void closeQuietly(SocketChannel c) {
        try {
            c.close();
        } catch (IOException e) {
            // closing for close(): nothing more to do with it
        }
    }

    /**
     * The request's line and headers, up to the blank line; null when the client did not send a whole one within
     * {@link #REQUEST_BYTES} or by {@code deadline} (or closed first).
     */
    private static String readRequest(SocketChannel client, Selector selector, long deadline) throws IOException {
        ByteBuffer in = ByteBuffer.allocate(REQUEST_BYTES);
        while (in.hasRemaining()) {
            int n = client.read(in);
            if (n < 0) {
                return null;
            }
            if (n > 0) {
                String s = new String(in.array(), 0, in.position(), StandardCharsets.ISO_8859_1);
                if (s.contains("\r\n\r\n") || s.contains("\n\n")) {
                    return s;
                }
            } else if (!await(selector, deadline)) {
                return null;
            }
        }
        return null;
    }

    /** Waits for the selected operation until {@code deadline}; false once it has passed. */
    private static boolean await(Selector selector, long deadline) throws IOException {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            return false;
        }
        selector.select(left);
        selector.selectedKeys().clear();
        return true;
    }

    /** The whole answer to {@code request} (null: none came whole), headers and body. */
    private ByteBuffer answer(String request) {
        if (request == null) {
            return response(400, "Bad Request", "no complete request within " + REQUEST_BYTES + " bytes and "
                    + CLIENT_MILLIS + " ms\n", false);
        }
        int eol = request.indexOf('\n');
        String line = request.substring(0, eol).strip();
        String[] parts = line.split(" ", -1);
        if (parts.length != 3 || parts[1].isEmpty()) {
            return response(400, "Bad Request", "request line \"" + shown(line) + "\" is not METHOD TARGET VERSION\n",
                    false);
        }
        if (!parts[2].equals("HTTP/1.1") && !parts[2].equals("HTTP/1.0")) {
            return response(505, "HTTP Version Not Supported", "version " + shown(parts[2])
                    + ": HTTP/1.1 or HTTP/1.0 only\n", false);
        }
        boolean head = parts[0].equals("HEAD");
        if (!head && !parts[0].equals("GET")) {
            return response(405, "Method Not Allowed", "method " + shown(parts[0]) + ": GET or HEAD only\n", false);
        }
        String path = parts[1];
        int query = path.indexOf('?');
        if (query >= 0) {
            path = path.substring(0, query);
        }
        if (!path.equals("/metrics")) {
            return response(404, "Not Found", "path " + shown(path) + ": the metrics are at /metrics\n", head);
        }
        String body;
        try {
            body = exposition.get();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "metrics endpoint " + describe() + ": the exposition failed", e);
            return response(500, "Internal Server Error", e + "\n", head);
        }
        return response(200, "OK", PrometheusText.CONTENT_TYPE, body, head);
    }

    /** What the client sent, for an answer that names it: at most 100 characters, printable ASCII, others as '?'. */
    private static String shown(String sent) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(sent.length(), 100); i++) {
            char c = sent.charAt(i);
            b.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return sent.length() > 100 ? b.append("...").toString() : b.toString();
    }

    private static ByteBuffer response(int status, String reason, String body, boolean head) {
        return response(status, reason, "text/plain; charset=utf-8", body, head);
    }

    private static ByteBuffer response(int status, String reason, String contentType, String body, boolean head) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        String headers = String.format(Locale.ROOT, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
                + "Connection: close\r\n%s\r\n", status, reason, contentType, b.length,
                status == 405 ? "Allow: GET, HEAD\r\n" : "");
        byte[] h = headers.getBytes(StandardCharsets.ISO_8859_1);
        ByteBuffer out = ByteBuffer.allocate(h.length + (head ? 0 : b.length));
        out.put(h);
        if (!head) {
            out.put(b);
        }
        return out.flip();
    }
}
