package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.NegotiationFailedException;
import io.virtio4j.vhost.frontend.VhostUserRequestFailedException;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link FrontendSession} against the net device served over a socket (the session is what {@link NetDriver} is
 * built on): negotiation failures name the missing bits, an orderly stop answers where each ring stands, a session
 * reconnects after the back-end went away and buffers offered meanwhile are served by the new back-end, intact,
 * and a listening session accepts a back-end that connects to it (and its next connection on reconnect).
 */
class FrontendSessionTest {
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    private static List<byte[]> frames(Random rnd, int n) {
        List<byte[]> frames = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            frames.add(GuestTraffic.randomFrame(rnd, 60 + rnd.nextInt(1400)));
        }
        return frames;
    }

    private static void assertEchoed(List<byte[]> sent, List<GuestTraffic.RxFrame> got) {
        assertEquals(sent.size(), got.size());
        for (int i = 0; i < sent.size(); i++) {
            assertArrayEquals(sent.get(i), got.get(i).frame(), "frame " + i);
        }
    }

    /**
     * Waits (bounded) until the device has no worker: the back-end noticed the connection closed and stopped the
     * rings, so it no longer touches them ("went away" for good, not still draining).
     */
    private static void awaitStopped(NetDevice device) throws InterruptedException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (device.workerThreadId(0) != -1) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("the back-end did not stop the device within " + PATIENCE);
            }
            Thread.sleep(1);
        }
    }

    @Test
    void missingFeatureBitsAreNamed() {
        NetDevice device = new NetDevice(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY));
        InProcessBackend.Connected c = InProcessBackend.start(device, "session-negotiation");
        try (device; FrontendSession s = FrontendSession.over(c.frontend())) {
            NegotiationFailedException e = assertThrows(NegotiationFailedException.class,
                    () -> s.negotiate(1L << 62, 1L << 62, FrontendSession.PROTOCOL_FEATURES, 0, 1));
            assertTrue(e.getMessage().contains("virtio feature bits 0x4000000000000000"), e.getMessage());
        }
    }

    @Test
    void missingQueuesAreNamed() {
        NetDevice device = new NetDevice(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY));
        InProcessBackend.Connected c = InProcessBackend.start(device, "session-queues");
        try (device; FrontendSession s = FrontendSession.over(c.frontend())) {
            long features = NetDriver.Config.defaults().features();
            NegotiationFailedException e = assertThrows(NegotiationFailedException.class,
                    () -> s.negotiate(features, features, FrontendSession.PROTOCOL_FEATURES, 0, 3));
            assertTrue(e.getMessage().contains("3 queues: the back-end has 1"), e.getMessage());
        }
    }

    /** The device's configuration space is read-only: SET_CONFIG is refused, and says so at the call. */
    @Test
    void setConfigReachesTheDevice() {
        NetDevice device = new NetDevice(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY));
        InProcessBackend.Connected c = InProcessBackend.start(device, "session-config");
        try (device; NetDriver d = NetDriver.start(c.frontend(), NetDriver.Config.defaults())) {
            byte[] mac = d.session().getConfig(0, 6);
            assertArrayEquals(NetBackend.MAC, mac);
            VhostUserRequestFailedException e = assertThrows(VhostUserRequestFailedException.class,
                    () -> d.session().setConfig(0, new byte[6]));
            assertTrue(e.getMessage().contains("SET_CONFIG"), e.getMessage());
            assertArrayEquals(NetBackend.MAC, d.session().getConfig(0, 6), "unchanged");
        }
    }

    /** After {@code n} echoes both rings of the pair stand at {@code n}: GET_VRING_BASE answers that. */
    @Test
    void stopAnswersWhereEachRingStands() {
        try (NetBackend backend = NetBackend.start(1, NetMode.LOOPBACK, NotificationMode.NOTIFY)) {
            try (NetDriver d = GuestTraffic.connect(backend.path(), NetDriver.Config.defaults())) {
                Random rnd = new Random(7);
                int n = 0;
                for (int round = 0; round < 3; round++) {
                    List<byte[]> sent = frames(rnd, 20);
                    assertEchoed(sent, GuestTraffic.echo(d, 0, sent));
                    n += sent.size();
                }
                long[] bases = d.session().stop();
                assertEquals(2, bases.length);
                assertEquals(n, bases[NetDriver.txRing(0)], "transmit ring base");
                assertEquals(n, bases[NetDriver.rxRing(0)], "receive ring base: one buffer per frame");
            }
            backend.assertServing();
        }
    }

    /**
     * The back-end goes away (the connection is closed); frames sent while it is away are served by the next
     * connection after {@link FrontendSession#reconnect}, which resumes each ring where the old one stood: every
     * frame comes back once, intact, and traffic goes on.
     */
    @Test
    void reconnectResumesAndServesWhatWasOfferedMeanwhile() throws Exception {
        try (NetBackend backend = NetBackend.start(1, NetMode.LOOPBACK, NotificationMode.NOTIFY)) {
            NetDriver.Config config = NetDriver.Config.defaults();
            try (NetDriver d = NetDriver.start(FrontendSession.connect(backend.path(), PATIENCE), config)) {
                Random rnd = new Random(11);
                List<byte[]> before = frames(rnd, 30);
                assertEchoed(before, GuestTraffic.echo(d, 0, before));
                d.disconnect();
                awaitStopped(backend.device());
                List<byte[]> meanwhile = frames(rnd, 10);
                GuestTraffic.refillRx(d, 0);
                for (byte[] f : meanwhile) {
                    GuestTraffic.addTx(d, 0, f);
                }
                d.kickTx(0); // nobody listens: the kick waits in the eventfd
                d.session().reconnect(PATIENCE);
                List<GuestTraffic.RxFrame> got = new ArrayList<>();
                for (int i = 0; i < meanwhile.size(); i++) {
                    got.add(GuestTraffic.receive(d, 0));
                }
                assertEchoed(meanwhile, got);
                GuestTraffic.awaitTxDone(d, 0);
                List<byte[]> after = frames(rnd, 30);
                assertEchoed(after, GuestTraffic.echo(d, 0, after));
                assertEquals(0, d.txInFlight(0));
            }
            backend.assertServing();
        }
    }

    /** Reconnecting to a back-end still connected stops its rings in order first; traffic goes on after. */
    @Test
    void reconnectWhileConnectedStopsFirst() throws Exception {
        try (NetBackend backend = NetBackend.start(1, NetMode.LOOPBACK, NotificationMode.NOTIFY)) {
            try (NetDriver d = NetDriver.start(FrontendSession.connect(backend.path(), PATIENCE),
                    NetDriver.Config.defaults())) {
                Random rnd = new Random(17);
                for (int round = 0; round < 3; round++) {
                    List<byte[]> sent = frames(rnd, 25);
                    assertEchoed(sent, GuestTraffic.echo(d, 0, sent));
                    d.session().reconnect(PATIENCE);
                }
                List<byte[]> sent = frames(rnd, 25);
                assertEchoed(sent, GuestTraffic.echo(d, 0, sent));
                assertEquals(100, d.session().stop()[NetDriver.txRing(0)], "every frame sent once");
            }
            backend.assertServing();
        }
    }

    /**
     * A listening session (QEMU's {@code server} chardev) accepts a back-end that connects to it, and on reconnect
     * accepts the back-end's next connection.
     */
    @Test
    void aListeningSessionAcceptsTheBackend() throws Exception {
        Path dir = Files.createTempDirectory("v4j-listen");
        Path path = dir.resolve("fe.sock");
        NetDevice device = new NetDevice(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY));
        VhostUserBackendEndpoint endpoint = new VhostUserBackendEndpoint(
                () -> new VhostUserSession(device, BackendOptions.defaults()));
        Thread backend = Thread.ofPlatform().daemon().start(() -> {
            try {
                endpoint.connect(path);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try (device; NetDriver d = NetDriver.start(FrontendSession.listen(path, PATIENCE), NetDriver.Config.defaults())) {
            Random rnd = new Random(13);
            List<byte[]> sent = frames(rnd, 16);
            assertEchoed(sent, GuestTraffic.echo(d, 0, sent));
            endpoint.close(); // the back-end stops after its current connection
            d.disconnect();
            backend.join(PATIENCE.toMillis());
            assertTrue(!backend.isAlive(), "the back-end ended with its connection");
            VhostUserBackendEndpoint again = new VhostUserBackendEndpoint(
                    () -> new VhostUserSession(device, BackendOptions.defaults()));
            Thread second = Thread.ofPlatform().daemon().start(() -> {
                try {
                    again.connect(path);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            d.session().reconnect(PATIENCE);
            List<byte[]> more = frames(rnd, 16);
            assertEchoed(more, GuestTraffic.echo(d, 0, more));
            again.close();
            d.disconnect();
            second.join(PATIENCE.toMillis());
        } finally {
            Files.deleteIfExists(path);
            Files.deleteIfExists(dir);
        }
    }

    @Test
    void protocolFeaturesAskedAreTheSessionsOwn() {
        NetDevice device = new NetDevice(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY));
        InProcessBackend.Connected c = InProcessBackend.start(device, "session-protocol");
        try (device; NetDriver d = NetDriver.start(c.frontend(), NetDriver.Config.defaults())) {
            long p = d.session().protocolFeatures();
            assertEquals(0, p & ~FrontendSession.PROTOCOL_FEATURES, "only what the session knows: 0x" + Long.toHexString(p));
            assertTrue(d.session().hasProtocol(ProtocolFeatures.REPLY_ACK), "REPLY_ACK: the net device offers it");
        }
    }
}
