package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.frontend.VhostUserRequestFailedException;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Random;
import java.util.logging.Level;

import static io.virtio4j.devices.net.GuestTraffic.addRawRx;
import static io.virtio4j.devices.net.GuestTraffic.addRawTx;
import static io.virtio4j.devices.net.GuestTraffic.addTx;
import static io.virtio4j.devices.net.GuestTraffic.connect;
import static io.virtio4j.devices.net.GuestTraffic.refillRx;
import static io.virtio4j.devices.net.GuestTraffic.transmitRandom;
import static io.virtio4j.devices.net.NetTrafficTest.echoAndCheck;
import static io.virtio4j.devices.net.NetTrafficTest.frames;
import static io.virtio4j.devices.net.NetTrafficTest.stopAndStats;
import static io.virtio4j.devices.net.NetTrafficTest.withBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A hostile guest (ring contents) or front-end against a running {@link NetDevice}: the damage stays with the
 * ring or connection concerned, the other queue pair keeps working, the server keeps serving, and no
 * descriptor is left open.
 */
class HostileNetPeerTest {
    private static final long QUIET_MILLIS = 300;
    private static final long BIT30 = ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);

    private static NetDriver.Config twoPairs() {
        return NetDriver.Config.defaults().withPairs(2);
    }

    /** A new front-end gets both pairs of the same back-end working. */
    private static void assertFreshConnectionWorks(NetBackend backend) {
        try (NetDriver g = connect(backend.path(), twoPairs())) {
            Random rnd = new Random(99);
            echoAndCheck(g, 0, 100, 100, 0, false, rnd);
            echoAndCheck(g, 1, 100, 100, 0, false, rnd);
        }
    }

    /**
     * Frames too short to be Ethernet frames, each ending on the last byte of guest memory, are dropped in every mode:
     * the reflector reads (touches) only bytes of each buffer, whatever its length, even when it skips the header
     * of a frame it drops. A read past a buffer here would leave guest memory: the pair's thread would die.
     */
    @ParameterizedTest
    @EnumSource(value = NetMode.Reflection.class)
    void runtsEndingAtTheEndOfGuestMemoryAreDropped(NetMode.Reflection reflection) {
        NetMode mode = switch (reflection) {
            case DROP -> NetMode.RXONLY;
            case UNCHANGED -> NetMode.LOOPBACK;
            case SWAP_MACS -> NetMode.MACSWAP;
        };
        withBackend(NetBackend.options(1, mode, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                long end = g.memory().byteSize();
                int[] lengths = {1, 2, NetFeatures.HDR_LEN - 1, NetFeatures.HDR_LEN, NetFeatures.HDR_LEN + 1,
                        NetFeatures.HDR_LEN + NetFeatures.ETH_HEADER - 1};
                for (int len : lengths) {
                    addRawTx(g, 0, g.gpa(end - len), len);
                }
                GuestTraffic.awaitTxDone(g, 0);
                NetStats s = stopAndStats(backend, g, 0, lengths.length);
                assertEquals(lengths.length, s.drops(NetStats.TX), "runts dropped");
                assertEquals(0, s.fromGuestPackets(), "runts counted as frames");
            }
        });
    }

    @Test
    void aTransmitDescriptorOutsideGuestMemoryBreaksThatQueueOnly() {
        withBackend(NetBackend.options(2, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (LogCapture log = new LogCapture(ReflectorWorker.class);
                 NetDriver g = connect(backend.path(), twoPairs())) {
                Random rnd = new Random(16);
                echoAndCheck(g, 0, 100, 100, 0, false, rnd);
                echoAndCheck(g, 1, 100, 100, 0, false, rnd);
                long outside = g.memory().byteSize() + 0x10000;
                addRawTx(g, 0, g.gpa(outside), 100);
                addTx(g, 0, frames(rnd, 1, 0).get(0)); // behind the bad one: never reached
                g.kickTx(0);
                log.await(Level.WARNING, m -> m.contains("transmit queue 1 broken"));

                // The other pair carries on, the connection still answers, pair 0 stays stopped.
                long bytes1 = echoAndCheck(g, 1, 1_000, 100, 0, false, rnd);
                assertEquals(backend.device().features() | BIT30, g.frontend().getFeatures());
                Thread.sleep(QUIET_MILLIS);
                assertNull(g.queue(1).pollUsed(), "the broken ring returned a buffer");
                NetStats s0 = stopAndStats(backend, g, 0, 100);
                assertEquals(100, s0.fromGuestPackets(), "pair 0 counted nothing after the bad descriptor");
                NetStats s1 = stopAndStats(backend, g, 1, 1_100);
                assertEquals(1_100, s1.fromGuestPackets());
                assertEquals(0, s1.fromGuestDrops());
                assertTrue(s1.fromGuestBytes() > bytes1);
            }
            assertFreshConnectionWorks(backend);
        });
    }

    /**
     * A queue the driver breaks (a ring violation the worker catches, not a dead worker) is reported to the
     * front-end through that ring's error eventfd (SET_VRING_ERR), once; the other ring's is not signalled, and the
     * other rings keep working.
     */
    @Test
    void aBrokenQueueSignalsItsErrorEventFdOnce() {
        withBackend(NetBackend.options(2, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (LogCapture log = new LogCapture(ReflectorWorker.class);
                 NetDriver g = connect(backend.path(), twoPairs());
                 EventFd txErr = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
                 EventFd rxErr = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
                VhostUserFrontend fe = g.frontend();
                fe.setVringErr(NetDriver.rxRing(0), rxErr);
                fe.setVringErr(NetDriver.txRing(0), txErr);
                Random rnd = new Random(23);
                echoAndCheck(g, 0, 100, 100, 0, false, rnd);
                assertEquals(0, txErr.tryRead(), "error eventfd signalled before anything broke");

                addRawTx(g, 0, g.gpa(g.memory().byteSize() + 0x10000), 100);
                g.kickTx(0);
                log.await(Level.WARNING, m -> m.contains("transmit queue 1 broken"));
                while (txErr.tryRead() == 0) {
                    Thread.sleep(1); // the watchdog of withBackend bounds this
                }
                // More kicks on the broken ring, and traffic on the other pair: no second signal, none on rx.
                addTx(g, 0, frames(rnd, 1, 0).get(0));
                g.kickTx(0);
                echoAndCheck(g, 1, 100, 100, 0, false, rnd);
                assertEquals(backend.device().features() | BIT30, fe.getFeatures());
                assertEquals(0, txErr.tryRead(), "the break was reported more than once");
                assertEquals(0, rxErr.tryRead(), "the receive ring is not broken");
            }
            assertFreshConnectionWorks(backend);
        });
    }

    @Test
    void aReceiveDescriptorOutsideGuestMemoryBreaksTheReceiveRingOnly() {
        withBackend(NetBackend.options(2, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (LogCapture log = new LogCapture(ReflectorWorker.class);
                 NetDriver g = connect(backend.path(), twoPairs())) {
                Random rnd = new Random(19);
                addRawRx(g, 0, g.gpa(g.memory().byteSize()), 2048);
                refillRx(g, 0);
                long bytes = transmitRandom(g, 0, 500, rnd); // the transmit ring goes on: frames counted and dropped
                log.await(Level.WARNING, m -> m.contains("receive queue 0 broken"));
                echoAndCheck(g, 1, 500, 100, 0, false, rnd);
                NetStats s0 = stopAndStats(backend, g, 0, 500);
                assertEquals(500, s0.fromGuestPackets());
                assertEquals(bytes, s0.fromGuestBytes());
                assertEquals(500, s0.fromGuestDrops(), "no frame reaches a broken receive ring");
                assertEquals(0, s0.toGuestPackets());
                assertEquals(500, stopAndStats(backend, g, 1, 500).toGuestPackets());
            }
            assertFreshConnectionWorks(backend);
        });
    }

    /**
     * A kick descriptor the back-end cannot wait on (a memfd: epoll refuses regular files). The request must be
     * refused (failure REPLY_ACK) or the connection closed; the back-end must not be left with a half-started
     * queue: the next front-end gets a fully working device.
     */
    @Test
    void aKickDescriptorThatCannotBePolled() {
        withBackend(NetBackend.options(2, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), twoPairs());
                 FileDescriptor notAnEventFd = Memfd.create("not-an-eventfd", 4096)) {
                echoAndCheck(g, 1, 100, 100, 0, false, new Random(20));
                VhostUserFrontend fe = g.frontend();
                fe.sendRaw(Request.SET_VRING_KICK.code(), ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_NEED_REPLY,
                        ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(1).array(), notAnEventFd);
                VhostUserFrontend.Reply r = fe.receive();
                if (r != null) {
                    assertEquals(Request.SET_VRING_KICK.code(), r.request());
                    assertNotEquals(0, r.u64(), "SET_VRING_KICK with a memfd was acknowledged as a success");
                    // pair 1 is untouched by the refused request
                    echoAndCheck(g, 1, 100, 100, 0, false, new Random(21));
                }
            }
            assertFreshConnectionWorks(backend);
        });
    }

    /**
     * A new memory table that no longer holds the started rings is refused before anything changes: the rings
     * keep running on the old table, and a later table that holds them replaces it without a restart.
     */
    @Test
    void aMemoryTableThatNoLongerHoldsTheRings() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                Random rnd = new Random(22);
                echoAndCheck(g, 0, 200, 100, 0, false, rnd);
                VhostUserFrontend fe = g.frontend();
                long skip = 64 * 1024; // the rings are in the first pages
                long size = g.memory().byteSize() - skip;
                VhostUserRequestFailedException e = assertThrows(VhostUserRequestFailedException.class,
                        () -> fe.setMemTable(List.of(new VhostUserFrontend.Region(g.gpa(skip), size,
                                g.config().userBase() + skip, skip, g.memfd()))));
                assertTrue(e.getMessage().contains("SET_MEM_TABLE"), e.getMessage());
                assertEquals(backend.device().features() | BIT30, fe.getFeatures());
                echoAndCheck(g, 0, 200, 100, 0, false, rnd);
                fe.setMemTable(List.of(g.region()));
                echoAndCheck(g, 0, 200, 100, 0, false, rnd);
                assertEquals(600, stopAndStats(backend, g, 0, 600).fromGuestPackets());
            }
        });
    }
}
