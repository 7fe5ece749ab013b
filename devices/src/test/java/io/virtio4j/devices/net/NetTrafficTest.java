package io.virtio4j.devices.net;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.GuestTraffic.RxFrame;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.EventFd;
import io.virtio4j.testkit.OpenFds;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.function.ThrowingConsumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static io.virtio4j.devices.net.GuestTraffic.connect;
import static io.virtio4j.devices.net.GuestTraffic.echo;
import static io.virtio4j.devices.net.GuestTraffic.transmitRandom;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Traffic through {@link NetDevice} over vhost-user, with {@link NetDriver} as guest and front-end: every
 * mode, merged receive buffers, several queue pairs and every notification mode, with exact counts and frame
 * contents checked, and no descriptor left open afterwards.
 */
class NetTrafficTest {
    static final Duration WATCHDOG = Duration.ofSeconds(90);

    /**
     * Runs {@code body} against a fresh back-end under a watchdog (guest and front-end live on the watchdog's
     * thread), then checks the server still serves, stops it and checks no descriptor is left open.
     */
    static void withBackend(NetDevice.Options options, ThrowingConsumer<NetBackend> body) {
        withBackend(() -> NetBackend.start(options), body);
    }

    /** The same, for a back-end made by {@code start} (serving a test's own device, say). */
    static void withBackend(java.util.function.Supplier<NetBackend> start, ThrowingConsumer<NetBackend> body) {
        Map<Integer, String> fds = OpenFds.snapshot();
        try (NetBackend backend = start.get()) {
            assertTimeoutPreemptively(WATCHDOG, () -> body.accept(backend));
            backend.assertServing();
        }
        OpenFds.assertBackTo(fds);
    }

    /** Checks one frame that came back: MACs swapped (or not), the rest byte for byte, and its header and buffers. */
    static void assertEchoed(NetDriver g, byte[] sent, RxFrame got, boolean swapped, String what) {
        byte[] expected = sent.clone();
        if (swapped) {
            System.arraycopy(sent, 6, expected, 0, 6);
            System.arraycopy(sent, 0, expected, 6, 6);
        }
        assertEquals(sent.length, got.frame().length, what + ": length");
        if (!Arrays.equals(expected, got.frame())) {
            assertArrayEquals(Arrays.copyOf(expected, 12), Arrays.copyOf(got.frame(), 12), what + ": MAC addresses");
            assertArrayEquals(expected, got.frame(), what + ": frame bytes after the MAC addresses");
        }
        assertEquals(g.config().buffersFor(sent.length), got.numBuffers(), what + ": num_buffers");
        int total = 0;
        int bufferSize = g.config().rxBufferSize();
        for (int i = 0; i < got.usedLengths().length; i++) {
            int len = got.usedLengths()[i];
            if (i < got.usedLengths().length - 1) {
                assertEquals(bufferSize, len, what + ": used length of buffer " + i + " (all but the last are full)");
            }
            total += len;
        }
        assertEquals(NetFeatures.HDR_LEN + sent.length, total,
                what + ": used lengths add up to header + frame");
    }

    /** Random frames of 60..1514 bytes, or all {@code fixedLen} long when it is positive. */
    static List<byte[]> frames(Random rnd, int n, int fixedLen) {
        List<byte[]> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(GuestTraffic.randomFrame(rnd, fixedLen > 0 ? fixedLen : 60 + rnd.nextInt(GuestTraffic.MAX_FRAME - 59)));
        }
        return out;
    }

    /** Echoes {@code total} frames in batches of {@code batch} on {@code pair} and checks each; returns bytes sent. */
    static long echoAndCheck(NetDriver g, int pair, int total, int batch, int fixedLen, boolean swapped, Random rnd) {
        long bytes = 0;
        for (int done = 0; done < total; ) {
            List<byte[]> sent = frames(rnd, Math.min(batch, total - done), fixedLen);
            List<RxFrame> got = echo(g, pair, sent);
            for (int i = 0; i < sent.size(); i++) {
                assertEchoed(g, sent.get(i), got.get(i), swapped, "pair " + pair + " frame " + (done + i));
                bytes += sent.get(i).length;
            }
            done += sent.size();
        }
        return bytes;
    }

    /**
     * Statistics after stopping the pair's rings (GET_VRING_BASE): the worker has finished counting. The transmit
     * ring's base must say that {@code txBuffers} one-slot buffers went through it.
     */
    static NetStats stopAndStats(NetBackend backend, NetDriver g, int pair, int txBuffers) {
        int qs = g.config().queueSize();
        // Split: the free-running avail index. Packed: both positions and wrap counters after txBuffers slots.
        long expected = g.config().format() == RingFormat.SPLIT ? txBuffers & 0xFFFF
                : new QueueState(txBuffers % qs, (txBuffers / qs) % 2 == 0, txBuffers % qs, (txBuffers / qs) % 2 == 0)
                        .toPackedBase();
        assertEquals(expected, g.frontend().getVringBase(2 * pair + 1),
                "GET_VRING_BASE of transmit ring " + (2 * pair + 1));
        g.frontend().getVringBase(2 * pair);
        return backend.device().stats(pair);
    }

    static void assertStats(NetStats s, long fromPackets, long fromBytes, long toPackets, long toBytes) {
        assertEquals(fromPackets, s.fromGuestPackets(), "fromGuestPackets");
        assertEquals(fromBytes, s.fromGuestBytes(), "fromGuestBytes");
        assertEquals(0, s.fromGuestDrops(), "fromGuestDrops");
        assertEquals(toPackets, s.toGuestPackets(), "toGuestPackets");
        assertEquals(toBytes, s.toGuestBytes(), "toGuestBytes");
    }

    @Test
    void rxonlyCountsExactlyWhatTheGuestSent() {
        withBackend(NetBackend.options(1, NetMode.RXONLY, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                int frames = 100_000;
                long bytes = 0;
                Random rnd = new Random(1);
                for (int done = 0; done < frames; done += 10_000) {
                    bytes += transmitRandom(g, 0, 10_000, rnd);
                }
                assertStats(stopAndStats(backend, g, 0, frames), frames, bytes, 0, 0);
            }
        });
    }

    /** The ring formats and IN_ORDER, each test's traffic runs over every combination. */
    enum Rings {
        SPLIT(RingFormat.SPLIT, false, 256),
        SPLIT_IN_ORDER(RingFormat.SPLIT, true, 256),
        // a packed ring's size need not be a power of two: an odd one wraps at places a split ring never does
        PACKED(RingFormat.PACKED, false, 250),
        PACKED_IN_ORDER(RingFormat.PACKED, true, 250);

        final RingFormat format;
        final boolean inOrder;
        final int queueSize;

        Rings(RingFormat format, boolean inOrder, int queueSize) {
            this.format = format;
            this.inOrder = inOrder;
            this.queueSize = queueSize;
        }

        NetDriver.Config config() {
            return NetDriver.Config.defaults().withFormat(format).withInOrder(inOrder).withQueueSize(queueSize);
        }
    }

    @ParameterizedTest
    @EnumSource(Rings.class)
    void macswapReturnsEveryFrameWithTheMacsSwapped(Rings rings) {
        withBackend(NetBackend.options(1, NetMode.MACSWAP, NotificationMode.NOTIFY), backend -> {
            // Header and frame in two descriptors, which go through an indirect table.
            try (NetDriver g = connect(backend.path(), rings.config().withTxSegments(2))) {
                int frames = 5_000;
                long bytes = echoAndCheck(g, 0, frames, 100, 0, true, new Random(2));
                assertStats(stopAndStats(backend, g, 0, frames), frames, bytes, frames, bytes);
            }
        });
    }

    @ParameterizedTest
    @EnumSource(Rings.class)
    void macswapWithoutMergedBuffersOrEventIdx(Rings rings) {
        withBackend(NetBackend.options(1, NetMode.MACSWAP, NotificationMode.NOTIFY), backend -> {
            NetDriver.Config c = rings.config().withMergeable(false).withEventIdx(false).withIndirect(false);
            try (NetDriver g = connect(backend.path(), c)) {
                int frames = 2_000;
                long bytes = echoAndCheck(g, 0, frames, 100, 0, true, new Random(3));
                assertStats(stopAndStats(backend, g, 0, frames), frames, bytes, frames, bytes);
            }
        });
    }

    /**
     * Frames too short or too long are dropped and counted, whether they sit in one descriptor or in a chain of
     * several (gathered apart before it is served), and every buffer still comes back, in pop order: a mix of both
     * shapes and of good and bad frames, on every ring format.
     */
    @ParameterizedTest
    @EnumSource(Rings.class)
    void framesOfBadLengthAreDroppedInEitherShapeAndEveryBufferComesBack(Rings rings) {
        withBackend(NetBackend.options(1, NetMode.RXONLY, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), rings.config())) {
                long gpa = g.region().guestPhysAddr();
                int tooLong = 70_000; // more than the 64 KiB frame the back-end takes, header apart
                assertTrue(g.region().size() > NetFeatures.HDR_LEN + tooLong, "guest memory holds the long frame");
                byte[] good = new byte[100];
                new Random(11).nextBytes(good);
                int tx = NetDriver.txRing(0);
                GuestTraffic.addTx(g, 0, good);
                addRaw(g, tx, new ScatterGather(2)
                        .readable(gpa, NetFeatures.HDR_LEN).readable(gpa, 5)); // short, a chain
                GuestTraffic.addTx(g, 0, good);
                addRaw(g, tx, new ScatterGather(2)
                        .readable(gpa, NetFeatures.HDR_LEN).readable(gpa, tooLong)); // long, a chain
                addRaw(g, tx, new ScatterGather(1)
                        .readable(gpa, NetFeatures.HDR_LEN + tooLong)); // long, one descriptor
                addRaw(g, tx, new ScatterGather(1)
                        .readable(gpa, NetFeatures.HDR_LEN + 5)); // short, one descriptor
                addRaw(g, tx, new ScatterGather(2)
                        .readable(gpa, NetFeatures.HDR_LEN).readable(gpa, 60)); // good, a chain
                GuestTraffic.addTx(g, 0, good);
                GuestTraffic.awaitTxDone(g, 0);
                NetStats s = stopAndStats(backend, g, 0, 8);
                assertEquals(4, s.fromGuestPackets(), "fromGuestPackets");
                assertEquals(3 * 100 + 60, s.fromGuestBytes(), "fromGuestBytes");
                assertEquals(4, s.fromGuestDrops(), "fromGuestDrops");
            }
        });
    }

    /**
     * A reflecting back-end whose receive ring is stopped (GET_VRING_BASE, as QEMU does first when it migrates the
     * guest) takes no frame from the transmit ring: a frame taken then could neither go back nor stay and would be
     * lost. The transmit ring's base says the frames are still there, for whichever back-end starts it next. Given
     * 200 ms after the kick, the worker would have taken them within microseconds without this rule.
     */
    @ParameterizedTest
    @EnumSource(Rings.class)
    void framesWaitInTheTransmitRingWhileTheReceiveRingIsStopped(Rings rings) {
        withBackend(NetBackend.options(1, NetMode.MACSWAP, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), rings.config())) {
                int frames = 50;
                long bytes = echoAndCheck(g, 0, frames, 100, 0, true, new Random(12));
                g.frontend().getVringBase(NetDriver.rxRing(0));
                byte[] frame = new byte[100];
                new Random(13).nextBytes(frame);
                for (int i = 0; i < 3; i++) {
                    GuestTraffic.addTx(g, 0, frame);
                }
                g.kickTx(0);
                Thread.sleep(200);
                assertEquals(0, g.reapTx(0), "no transmit buffer came back");
                assertEquals(3, g.txInFlight(0));
                // the base counts only the frames served before: the three are left for the next back-end
                NetStats s = stopAndStats(backend, g, 0, frames);
                assertStats(s, frames, bytes, frames, bytes);
            }
        });
    }

    /**
     * A receive ring started but disabled (SET_VRING_ENABLE 0): the spec has a disabled ring's transmit frames drained
     * and dropped; each is counted received and dropped, so that received = sent back + dropped still holds.
     */
    @Test
    void framesThatCannotGoBackWhileTheReceiveRingIsDisabledAreDrainedAndCountedDropped() {
        withBackend(NetBackend.options(1, NetMode.MACSWAP, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                int frames = 50;
                long bytes = echoAndCheck(g, 0, frames, 100, 0, true, new Random(14));
                g.frontend().setVringEnable(NetDriver.rxRing(0), false);
                byte[] frame = new byte[100];
                new Random(15).nextBytes(frame);
                for (int i = 0; i < 3; i++) {
                    GuestTraffic.addTx(g, 0, frame);
                }
                GuestTraffic.awaitTxDone(g, 0);
                NetStats s = stopAndStats(backend, g, 0, frames + 3);
                assertEquals(frames + 3, s.fromGuestPackets(), "fromGuestPackets");
                assertEquals(bytes + 300, s.fromGuestBytes(), "fromGuestBytes");
                assertEquals(3, s.fromGuestDrops(), "fromGuestDrops");
                assertEquals(frames, s.toGuestPackets(), "toGuestPackets");
                assertEquals(s.fromGuestPackets(), s.toGuestPackets() + s.fromGuestDrops(), "received = sent back + dropped");
            }
        });
    }

    private static void addRaw(NetDriver g, int ring, ScatterGather chain) {
        assertTrue(g.addChain(ring, chain), "ring " + ring + " has a free slot");
    }

    /** Guest memory at a guest-physical base above 4 GiB and another user base: both translations are used right. */
    @Test
    void guestMemoryAtOtherBases() {
        withBackend(NetBackend.options(1, NetMode.MACSWAP, NotificationMode.NOTIFY), backend -> {
            NetDriver.Config c = NetDriver.Config.defaults().withBases(0x1_0000_0000L, 0x7f00_0000_0000L).withTxSegments(2);
            try (NetDriver g = connect(backend.path(), c)) {
                assertEquals(0x1_0000_0000L, g.region().guestPhysAddr());
                assertEquals(0x7f00_0000_0000L, g.region().userAddr());
                int frames = 1_000;
                long bytes = echoAndCheck(g, 0, frames, 100, 0, true, new Random(8));
                assertStats(stopAndStats(backend, g, 0, frames), frames, bytes, frames, bytes);
            }
        });
    }

    @ParameterizedTest
    @EnumSource(Rings.class)
    void loopbackSpreadsLargeFramesOverMergedReceiveBuffers(Rings rings) {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), rings.config().withRxBufferSize(256))) {
                assertEquals(6, g.config().buffersFor(1500));
                Random rnd = new Random(4);
                long bytes = echoAndCheck(g, 0, 2_000, 32, 1500, false, rnd);
                bytes += echoAndCheck(g, 0, 2_000, 32, 0, false, rnd); // 1..6 buffers each
                assertStats(stopAndStats(backend, g, 0, 4_000), 4_000, bytes, 4_000, bytes);
            }
        });
    }

    @ParameterizedTest
    @EnumSource(Rings.class)
    void twoQueuePairsCarryTheirOwnTraffic(Rings rings) {
        withBackend(NetBackend.options(2, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), rings.config().withPairs(2))) {
                Random rnd = new Random(5);
                long[] bytes = new long[2];
                int[] frames = {3_000, 2_000};
                int[] done = new int[2];
                while (done[0] < frames[0] || done[1] < frames[1]) {
                    for (int p = 0; p < 2; p++) {
                        int n = Math.min(100, frames[p] - done[p]);
                        if (n > 0) {
                            bytes[p] += echoAndCheck(g, p, n, n, 0, false, rnd);
                            done[p] += n;
                        }
                    }
                }
                for (int p = 0; p < 2; p++) {
                    assertStats(stopAndStats(backend, g, p, frames[p]), frames[p], bytes[p], frames[p], bytes[p]);
                }
            }
        });
    }

    @ParameterizedTest
    @EnumSource(NotificationMode.class)
    void everyNotificationModeMovesTraffic(NotificationMode mode) {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, mode), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                Random rnd = new Random(6);
                long bytes = echoAndCheck(g, 0, 2_000, 100, 0, false, rnd);
                // Then frames with only the receive buffers left posted: those get one frame each, the rest are dropped.
                int posted = g.queue(0).inFlight();
                bytes += transmitRandom(g, 0, 10_000, rnd);
                NetStats s = stopAndStats(backend, g, 0, 12_000);
                assertEquals(12_000, s.fromGuestPackets(), "fromGuestPackets");
                assertEquals(bytes, s.fromGuestBytes(), "fromGuestBytes");
                assertEquals(2_000 + posted, s.toGuestPackets(), "toGuestPackets");
                assertEquals(10_000 - posted, s.fromGuestDrops(), "fromGuestDrops (no receive buffer)");
            }
        });
    }

    /**
     * The notification mode is chosen per queue. A POLL queue keeps its pair's thread spinning, whichever queue it
     * is, so the device never asks the guest to kick its transmit queue: with EVENT_IDX, avail_event stays where
     * it started and the guest kicks once at most (for its first buffer); without it (DPDK's virtio-user), the
     * transmit ring's NO_NOTIFY flag is set when the ring is attached, so the guest kicks at most for what it added
     * before (a ring starts with kicks asked for: before the fix it kicked after every batch). With both NOTIFY the
     * device asks for a kick every time it goes to sleep between the batches (18 kicks in a trial run).
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"NOTIFY, POLL, true", "POLL, NOTIFY, true", "HYBRID, POLL, true",
            "NOTIFY, POLL, false", "POLL, POLL, false"})
    void aPollQueueKeepsThePairsThreadPolling(NotificationMode rx, NotificationMode tx, boolean eventIdx) {
        NetDevice.Options options = new NetDevice.Options(1, NetMode.LOOPBACK, new NotificationMode[] {rx, tx}, 20_000,
                64, new int[0], NetBackend.MAC, 1500);
        withBackend(options, backend -> {
            try (NetDriver g = GuestTraffic.connect(backend.path(), NetDriver.Config.defaults().withEventIdx(eventIdx))) {
                long bytes = echoAndCheck(g, 0, 2_000, 100, 0, false, new Random(8));
                long kicks = g.queue(g.txRing(0)).counters().kicksSent;
                assertStats(stopAndStats(backend, g, 0, 2_000), 2_000, bytes, 2_000, bytes);
                assertTrue(kicks <= 1, "the guest kicked its transmit queue " + kicks + " times");
            }
        });
    }

    @Test
    void hybridAndNotifyQueuesTogetherMoveTraffic() {
        NetDevice.Options options = new NetDevice.Options(1, NetMode.MACSWAP,
                new NotificationMode[] {NotificationMode.NOTIFY, NotificationMode.HYBRID}, 20_000, 64, new int[0],
                NetBackend.MAC, 1500);
        withBackend(options, backend -> {
            try (NetDriver g = GuestTraffic.connect(backend.path(), NetDriver.Config.defaults())) {
                long bytes = echoAndCheck(g, 0, 2_000, 100, 0, true, new Random(9));
                assertStats(stopAndStats(backend, g, 0, 2_000), 2_000, bytes, 2_000, bytes);
            }
        });
    }

    @Test
    void nofdKickAndCallMeanBothSidesPoll() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults().withEventFds(false))) {
                long bytes = echoAndCheck(g, 0, 2_000, 100, 0, false, new Random(7));
                assertStats(stopAndStats(backend, g, 0, 2_000), 2_000, bytes, 2_000, bytes);
            }
        });
    }

    /**
     * A front-end that never reads its call eventfds (here saturated from the start: 2^64-2): every notification
     * the device sends fails with EAGAIN, which is no failure (the front-end is notified already), so the pair's
     * thread serves on; the driver polls the rings. Every frame comes back, checked, and nothing was added to the
     * counters.
     */
    @Test
    void callEventFdsTheFrontEndNeverReadsDoNotStopTheDevice() {
        long full = 0xFFFF_FFFF_FFFF_FFFEL;
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults().withEventFds(false));
                 EventFd rxCall = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
                 EventFd txCall = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
                rxCall.write(full);
                txCall.write(full);
                g.frontend().setVringCall(NetDriver.rxRing(0), rxCall);
                g.frontend().setVringCall(NetDriver.txRing(0), txCall);
                long bytes = echoAndCheck(g, 0, 2_000, 100, 0, false, new Random(8));
                assertStats(stopAndStats(backend, g, 0, 2_000), 2_000, bytes, 2_000, bytes);
                assertEquals(full, rxCall.tryRead());
                assertEquals(full, txCall.tryRead());
            }
        });
    }
}
