package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.GuestTraffic.RxFrame;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static io.virtio4j.devices.net.GuestTraffic.addTx;
import static io.virtio4j.devices.net.GuestTraffic.awaitTxDone;
import static io.virtio4j.devices.net.GuestTraffic.connect;
import static io.virtio4j.devices.net.GuestTraffic.echo;
import static io.virtio4j.devices.net.GuestTraffic.receive;
import static io.virtio4j.devices.net.GuestTraffic.refillRx;
import static io.virtio4j.devices.net.GuestTraffic.transmitRandom;
import static io.virtio4j.devices.net.NetTrafficTest.assertEchoed;
import static io.virtio4j.devices.net.NetTrafficTest.assertStats;
import static io.virtio4j.devices.net.NetTrafficTest.echoAndCheck;
import static io.virtio4j.devices.net.NetTrafficTest.frames;
import static io.virtio4j.devices.net.NetTrafficTest.stopAndStats;
import static io.virtio4j.devices.net.NetTrafficTest.withBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ring and connection lifecycle of {@link NetDevice} over vhost-user: enabling after kicks, stopping with
 * GET_VRING_BASE and resuming, reconnecting, replacing the memory table under traffic, and a guest that breaks
 * one ring.
 */
class NetLifecycleTest {
    /** How long "nothing happens" is watched for; only ever makes a broken back-end pass, never a good one fail. */
    private static final long QUIET_MILLIS = 300;

    private static void quietPeriod() throws InterruptedException {
        Thread.sleep(QUIET_MILLIS);
    }

    @Test
    void aKickBeforeTheRingIsEnabledIsNotLost() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults().withEnableRings(false))) {
                List<byte[]> sent = frames(new Random(10), 50, 0);
                refillRx(g, 0);
                for (byte[] f : sent) {
                    addTx(g, 0, f);
                }
                g.kickTx(0); // the first kick of the ring, before SET_VRING_ENABLE
                quietPeriod();
                assertEquals(0, backend.device().stats(0).fromGuestPackets(), "a disabled ring is not processed");
                g.frontend().setVringEnable(0, true);
                g.frontend().setVringEnable(1, true); // no kick after this
                for (int i = 0; i < sent.size(); i++) {
                    assertEchoed(g, sent.get(i), receive(g, 0), false, "frame " + i);
                }
                awaitTxDone(g, 0);
                long bytes = sent.stream().mapToLong(f -> f.length).sum();
                assertStats(stopAndStats(backend, g, 0, 50), 50, bytes, 50, bytes);
            }
        });
    }

    @Test
    void getVringBaseStopsTheRingAndSetVringBaseKickEnableResumeIt() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                VhostUserFrontend fe = g.frontend();
                Random rnd = new Random(11);
                long bytes = echoAndCheck(g, 0, 300, 100, 0, false, rnd);
                // QEMU's stop: disable, then GET_VRING_BASE on each ring
                fe.setVringEnable(0, false);
                fe.setVringEnable(1, false);
                assertEquals(300, fe.getVringBase(1), "transmit ring: next avail index after 300 frames");
                assertEquals(300, fe.getVringBase(0), "receive ring: 300 one-buffer frames delivered");
                assertStats(backend.device().stats(0), 300, bytes, 300, bytes);

                // Stopped: new buffers and kicks go unanswered.
                List<byte[]> later = frames(rnd, 40, 0);
                refillRx(g, 0);
                for (byte[] f : later) {
                    addTx(g, 0, f);
                }
                g.kickTx(0);
                g.queue(1).kick();
                g.kickFd(1).write(1); // and an explicit one: the back-end closed its copy of the kick eventfd
                quietPeriod();
                assertNull(g.queue(1).pollUsed(), "a stopped ring returned a buffer");
                assertEquals(300, backend.device().stats(0).fromGuestPackets(), "a stopped ring was processed");

                // Restart in QEMU's order: BASE, KICK, CALL, ENABLE; the back-end resumes where it stopped.
                for (int ring = 0; ring < 2; ring++) {
                    fe.setVringBase(ring, 300);
                    fe.setVringKick(ring, g.kickFd(ring));
                    fe.setVringCall(ring, g.callFd(ring));
                    fe.setVringEnable(ring, true);
                }
                for (int i = 0; i < later.size(); i++) {
                    assertEchoed(g, later.get(i), receive(g, 0), false, "frame " + i + " after the restart");
                    bytes += later.get(i).length;
                }
                awaitTxDone(g, 0);
                bytes += echoAndCheck(g, 0, 300, 100, 0, false, rnd);
                assertStats(stopAndStats(backend, g, 0, 640), 640, bytes, 640, bytes);
            }
        });
    }

    /**
     * A guest that went to sleep waiting for completions while the rings were stopped must be woken once they
     * run again, also when the front-end sends SET_VRING_KICK before SET_VRING_CALL (QEMU's order): the buffers
     * are then processed before the back-end has a call eventfd to notify through.
     */
    @Test
    void aGuestAsleepAcrossARingRestartIsWoken() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                VhostUserFrontend fe = g.frontend();
                Random rnd = new Random(12);
                echoAndCheck(g, 0, 100, 100, 0, false, rnd);
                assertEquals(100, fe.getVringBase(1));
                assertEquals(100, fe.getVringBase(0));
                List<byte[]> later = frames(rnd, 20, 0);
                refillRx(g, 0);
                for (byte[] f : later) {
                    addTx(g, 0, f);
                }
                g.kickTx(0);
                // The guest arms its callbacks (nothing is used yet) and sleeps on both rings' eventfds.
                assertFalse(g.queue(1).enableCallbacksOrFindPending(), "nothing used while stopped");
                assertFalse(g.queue(0).enableCallbacksOrFindPending(), "nothing used while stopped");
                g.callFd(0).tryRead();
                g.callFd(1).tryRead();
                for (int ring = 0; ring < 2; ring++) {
                    fe.setVringBase(ring, 100);
                    fe.setVringKick(ring, g.kickFd(ring));
                    fe.setVringCall(ring, g.callFd(ring));
                    fe.setVringEnable(ring, true);
                }
                for (int ring = 0; ring < 2; ring++) {
                    assertTrue(g.awaitCall(ring, 20_000_000_000L), "ring " + ring
                            + ": a guest asleep since before the restart was not woken (buffers used: "
                            + g.queue(ring).hasUsed() + ")");
                }
                for (int i = 0; i < later.size(); i++) {
                    assertEchoed(g, later.get(i), receive(g, 0), false, "frame " + i + " after the restart");
                }
                awaitTxDone(g, 0);
            }
        });
    }

    @Test
    void aNewFrontEndAfterAClosedOneGetsAFullWorkingDevice() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            Random rnd = new Random(13);
            long bytes = 0;
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                bytes += echoAndCheck(g, 0, 500, 100, 0, false, rnd);
            }
            // The second one goes away with buffers in flight and unprocessed kicks.
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                bytes += echoAndCheck(g, 0, 500, 100, 0, false, rnd);
                refillRx(g, 0);
                for (byte[] f : frames(rnd, 200, 0)) {
                    addTx(g, 0, f);
                }
                g.kickTx(0);
            }
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults().withRxBufferSize(256))) {
                long before = backend.device().stats(0).fromGuestPackets();
                assertTrue(before >= 1000 && before <= 1200, "frames counted before: " + before);
                long more = echoAndCheck(g, 0, 500, 32, 0, false, rnd);
                NetStats s = stopAndStats(backend, g, 0, 500);
                assertEquals(before + 500, s.fromGuestPackets(), "statistics add up over connections");
                assertTrue(s.fromGuestBytes() >= bytes + more);
            }
        });
    }

    @Test
    void replacingTheMemoryTableUnderTrafficKeepsWorking() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                // A traffic thread keeps the transmit ring busy (no receive buffers posted: loopback drops them, but
                // every frame is counted); this thread replaces the memory table meanwhile, with the same memfd.
                int frames = 40_000;
                AtomicLong bytes = new AtomicLong();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                Thread traffic = new Thread(() -> {
                    try {
                        bytes.set(transmitRandom(g, 0, frames, new Random(14)));
                    } catch (Throwable t) {
                        failure.set(t);
                    }
                }, "guest-traffic");
                traffic.start();
                int replaced = 0;
                while (traffic.isAlive() || replaced == 0) {
                    g.frontend().setMemTable(List.of(g.region()));
                    replaced++;
                }
                traffic.join();
                if (failure.get() != null) {
                    throw new AssertionError("traffic thread failed after " + replaced + " memory table(s)", failure.get());
                }
                NetStats s = stopAndStats(backend, g, 0, frames);
                assertEquals(frames, s.fromGuestPackets(), "fromGuestPackets across " + replaced + " memory tables");
                assertEquals(bytes.get(), s.fromGuestBytes(), "fromGuestBytes");
                // restart both rings and check the receive path over the last table
                for (int ring = 0; ring < 2; ring++) {
                    g.frontend().setVringBase(ring, ring == 1 ? frames & 0xFFFF : 0);
                    g.frontend().setVringKick(ring, g.kickFd(ring));
                    g.frontend().setVringCall(ring, g.callFd(ring));
                }
                g.frontend().setMemTable(List.of(g.region()));
                echoAndCheck(g, 0, 300, 100, 0, false, new Random(15));
            }
        });
    }

    /**
     * Features renegotiated while the rings are stopped (QEMU: stop, SET_FEATURES, start, as after a guest driver
     * reload) hold for the restarted rings, though the pair's worker thread lives on: without MRG_RXBUF any more,
     * a frame larger than one receive buffer is dropped (its buffer goes back unused) and never spread, and a frame
     * that fits says num_buffers 1.
     */
    @Test
    void featuresRenegotiatedWhileTheRingsAreStoppedHoldForTheRestartedRings() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            NetDriver.Config merged = NetDriver.Config.defaults().withRxBufferSize(256);
            try (NetDriver g = connect(backend.path(), merged)) {
                Random rnd = new Random(19);
                byte[] large = GuestTraffic.randomFrame(rnd, 1000);
                assertEquals(4, echo(g, 0, List.of(large)).get(0).numBuffers(), "merged: spread over 4 buffers");
                long txBase = 1;
                assertEquals(txBase, g.frontend().getVringBase(1));
                g.frontend().getVringBase(0);

                g.frontend().setFeatures(merged.withMergeable(false).features()
                        | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES));
                g.resetRings();
                g.setUpRing(0, 0);
                g.setUpRing(1, 0);
                assertNotEquals(-1, backend.device().workerThreadId(0), "the pair's worker lives on");

                byte[] small = GuestTraffic.randomFrame(rnd, 100);
                refillRx(g, 0);
                addTx(g, 0, large);
                addTx(g, 0, small);
                g.kickTx(0);
                RxFrame got = receive(g, 0);
                assertEquals(small.length, got.frame().length, "the large frame is not delivered; the small one is");
                assertEquals(1, got.numBuffers(), "num_buffers without MRG_RXBUF");
                assertEquals(1, got.usedLengths().length);
                awaitTxDone(g, 0);
                NetStats s = stopAndStats(backend, g, 0, 2);
                assertEquals(1, s.fromGuestDrops(), "the large frame: no receive buffer holds it");
                assertEquals(2, s.toGuestPackets(), "the large frame before, the small one after");
                assertEquals(g.config().queueSize(), g.rxPosted(0) + 1, "every receive buffer but the small frame's is"
                        + " still the guest's");
            }
        });
    }

    @Test
    void resetDeviceThenANewSetupOnTheSameConnection() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                Random rnd = new Random(18);
                long bytes = echoAndCheck(g, 0, 300, 100, 0, false, rnd);
                refillRx(g, 0);
                g.frontend().resetDevice();
                g.resetRings();
                g.setUpAgain();
                bytes += echoAndCheck(g, 0, 300, 100, 0, false, rnd);
                assertStats(stopAndStats(backend, g, 0, 300), 600, bytes, 600, bytes);
            }
        });
    }
}
