package io.virtio4j.vhost.frontend;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.vhost.protocol.Header;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.U64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A back-end that stops answering does not block the front-end for ever: a request waits at most the reply
 * patience ({@link BackendTimeoutException}, and the connection refuses further requests, being out of step), and
 * {@link FrontendSession#reconnect} takes a back-end wedged in GET_VRING_BASE as gone and goes on with its next
 * connection. The back-end is a scripted peer that reads every message and answers only what it is told to.
 */
class WedgedBackendTest {
    private static final Duration PATIENCE = Duration.ofMillis(300);
    /** Bounds the whole test: without the reply patience the front-end waits for ever. */
    private static final Duration BOUND = Duration.ofSeconds(20);
    private static final long FEATURES = VirtioFeatures.bit(VirtioFeatures.VERSION_1)
            | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);

    @TempDir
    Path dir;

    /**
     * Accepts connections one after the other and reads each to its end, recording the request codes per
     * connection; answers GET_FEATURES and GET_PROTOCOL_FEATURES unless {@code mute}, and never GET_VRING_BASE on
     * its first connection (wedged there).
     */
    private static final class ScriptedPeer implements AutoCloseable {
        final List<List<Integer>> connections = new CopyOnWriteArrayList<>();
        private final UnixServerSocket server;
        private final boolean mute;
        private final Thread thread;

        ScriptedPeer(Path path, boolean mute) {
            this.server = UnixServerSocket.listen(path, 1);
            this.mute = mute;
            this.thread = Thread.ofPlatform().daemon().start(this::serve);
        }

        private void serve() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buf = arena.allocate(Header.SIZE + 4096, 8);
                while (true) {
                    UnixSocket s;
                    try {
                        s = server.accept();
                    } catch (LinuxException e) {
                        return; // shut down
                    }
                    List<Integer> seen = new CopyOnWriteArrayList<>();
                    connections.add(seen);
                    try (s) {
                        Header h;
                        while ((h = read(s, buf)) != null) {
                            seen.add(h.request());
                            long answer = h.request() == Request.GET_FEATURES.code() ? FEATURES : 0;
                            boolean answers = !mute && (h.request() == Request.GET_FEATURES.code()
                                    || h.request() == Request.GET_PROTOCOL_FEATURES.code()
                                    || h.request() == Request.GET_VRING_BASE.code() && connections.size() > 1);
                            if (answers) {
                                byte[] payload = h.request() == Request.GET_VRING_BASE.code()
                                        ? buf.asSlice(Header.SIZE, h.size()).toArray(ValueLayout.JAVA_BYTE)
                                        : new U64(answer).encode();
                                new Header(h.request(), ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY,
                                        payload.length).writeTo(buf);
                                MemorySegment.copy(MemorySegment.ofArray(payload), 0, buf, Header.SIZE, payload.length);
                                s.sendmsg(buf, Header.SIZE + payload.length);
                            }
                        }
                    } catch (LinuxException e) {
                        // the front-end reset the connection: take the next
                    }
                }
            }
        }

        /** One message (its descriptors closed), or null at the end of the connection. */
        private static Header read(UnixSocket s, MemorySegment buf) {
            if (!readFully(s, buf, 0, Header.SIZE)) {
                return null;
            }
            Header h = Header.read(buf);
            return readFully(s, buf, Header.SIZE, Header.SIZE + h.size()) ? h : null;
        }

        private static boolean readFully(UnixSocket s, MemorySegment buf, long from, long to) {
            FileDescriptor[] fds = new FileDescriptor[UnixSocket.MAX_FDS];
            for (long at = from; at < to; ) {
                UnixSocket.Received r = s.recvmsg(buf.asSlice(at, to - at), fds);
                for (int i = 0; i < r.fds(); i++) {
                    fds[i].close();
                }
                if (r.bytes() == 0) {
                    return false;
                }
                at += r.bytes();
            }
            return true;
        }

        @Override
        public void close() throws InterruptedException {
            server.shutdown();
            thread.join(BOUND.toMillis());
            server.close();
        }
    }

    @Test
    void aRequestNobodyAnswersTimesOutAndTheConnectionThenRefuses() throws Exception {
        Path path = dir.resolve("mute.sock");
        // the session is made and used on the bounding thread (its connection's buffer is confined to it)
        try (ScriptedPeer peer = new ScriptedPeer(path, true)) {
            assertTimeoutPreemptively(BOUND, () -> {
                try (FrontendSession session = FrontendSession.connect(path, PATIENCE)) {
                    BackendTimeoutException e = assertThrows(BackendTimeoutException.class,
                            () -> session.negotiate(FEATURES, FEATURES, FrontendSession.PROTOCOL_FEATURES, 0, 1));
                    assertTrue(e.getMessage().contains("GET_FEATURES") && e.getMessage().contains(PATIENCE.toString()),
                            e.getMessage());
                    e = assertThrows(BackendTimeoutException.class, () -> session.frontend().getFeatures());
                    assertTrue(e.getMessage().contains("out of step"), e.getMessage());
                }
            });
        }
    }

    @Test
    void reconnectTakesABackendWedgedInGetVringBaseAsGone() throws Exception {
        Path path = dir.resolve("wedged.sock");
        try (ScriptedPeer peer = new ScriptedPeer(path, false)) {
            assertTimeoutPreemptively(BOUND, () -> wedgedThenReconnected(path, peer));
        }
    }

    private static void wedgedThenReconnected(Path path, ScriptedPeer peer) throws InterruptedException {
        try (FrontendSession session = FrontendSession.connect(path, PATIENCE)) {
            session.negotiate(FEATURES, FEATURES, FrontendSession.PROTOCOL_FEATURES, 0, 1);
            session.attach(GuestMemory.create("wedged-backend-test", FrontendSession.ringBytes(RingFormat.SPLIT, 16)));
            session.addRing(RingFormat.SPLIT, 16, 0, DriverOptions.defaults(), true);
            session.start();
            session.reconnect(PATIENCE);
            assertTrue(session.connected());
            long deadline = System.nanoTime() + BOUND.toNanos();
            // the peer reads the new connection's set-up on its own thread: wait (bounded) for its last message
            while (peer.connections.size() < 2
                    || !peer.connections.get(1).contains(Request.SET_VRING_ENABLE.code())) {
                assertTrue(System.nanoTime() - deadline < 0, "the new connection was not set up: " + peer.connections);
                Thread.sleep(1);
            }
            assertTrue(peer.connections.get(0).contains(Request.GET_VRING_BASE.code()),
                    "the old back-end was asked to stop: " + peer.connections.get(0));
            session.stop(); // the new connection answers
        }
    }
}
