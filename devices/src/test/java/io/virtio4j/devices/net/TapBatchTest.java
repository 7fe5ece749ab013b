package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.DatagramPair;
import io.virtio4j.os.Errno;
import io.virtio4j.os.FrameReadBatch;
import io.virtio4j.os.netlab.UdpFrames;
import io.virtio4j.vhost.backend.InProcessBackend;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.List;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tap mode's batched receive path ({@link io.virtio4j.os.FrameReadBatch}: several frames per system call) with
 * exact counts, which a real tap cannot give (its kernel sends frames of its own: neighbour discovery, ARP): the
 * port is a datagram socket pair, whose far end this test writes and reads. Every frame carries a sequence number
 * and a CRC over its payload; both directions check each frame's order and payload and count exactly. The guest
 * posts receive buffers only once the port pushes back, so the worker meets a full receive ring with frames read
 * ahead in its batch, which must wait there, in order, and none lost. The worker allocates nothing per frame.
 */
class TapBatchTest {
    private static final int TO_GUEST = 3000;
    private static final int FROM_GUEST = 1000;
    private static final int WARM_UP = 300;
    private static final byte[] MAC = UdpFrames.mac("02:00:00:00:00:01");
    private static final byte[] IP = UdpFrames.ipv4("169.254.1.1");

    private static boolean ioUringWorks() {
        try (DatagramPair p = DatagramPair.create(); Arena arena = Arena.ofConfined();
             FrameReadBatch probe = FrameReadBatch.create(p.first(), 2, 64, arena, true)) {
            return probe.batched();
        }
    }

    private static int payloadLength(int seq) {
        return UdpFrames.MIN_PAYLOAD + (seq * 131) % 1400;
    }

    @ParameterizedTest(name = "mergeable {0}")
    @ValueSource(booleans = {true, false})
    void everyFrameOnceInOrderIntactBothWays(boolean mergeable) throws Exception {
        // A ring smaller than what the port holds: the worker meets a full ring with frames read ahead.
        NetDriver.Config cfg = NetDriver.Config.defaults().withQueueSize(64).withMergeable(mergeable)
                .withRxBufferSize(mergeable ? 1024 : 2048);
        try (DatagramPair port = DatagramPair.create(); Arena arena = Arena.ofConfined()) {
            NetDevice device = NetDevice.overPorts(new NetDevice.Options(1,
                    new NetMode.Tap("dgram", TapPolling.current()), NotificationMode.NOTIFY, 0, 64, new int[0],
                    TapRig.GUEST_MAC_BYTES, 1500), List.of(port.first()));
            InProcessBackend.Connected c = InProcessBackend.start(device, "tap-batch");
            try (device; NetDriver g = NetDriver.start(c.frontend(), cfg)) {
                MemorySegment frame = arena.allocate(2048);

                // ---- port to guest ----
                int written = 0;
                int[] received = {0};
                int[] bad = {0};
                int rounds = 0;
                int allocatingRounds = 0;
                com.sun.management.ThreadMXBean threads =
                        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
                long worker = device.workerThreadId(0);
                long allocatedBefore = -1;
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (received[0] < TO_GUEST && System.nanoTime() < deadline) {
                    while (written < TO_GUEST) {
                        frame.asSlice(0, NetFeatures.HDR_LEN).fill((byte) 0); // a vnet header asking for nothing
                        int len = NetFeatures.HDR_LEN + UdpFrames.udpFrame(frame, NetFeatures.HDR_LEN, MAC, MAC, IP, IP,
                                1, 2, payloadLength(written), written);
                        long w = port.second().write(frame, len);
                        if (w == -Errno.EAGAIN) {
                            break;
                        }
                        assertEquals(len, w);
                        written++;
                    }
                    // The port is full (or all is written): only now does the guest take frames and post buffers.
                    g.receive(0, (f, length, numBuffers) -> {
                        long eth = NetFeatures.HDR_LEN;
                        int payload = (int) (length - eth - UdpFrames.HEADERS);
                        long seq = payload < UdpFrames.MIN_PAYLOAD ? -1 : UdpFrames.check(f, eth + UdpFrames.HEADERS, payload);
                        if (seq != received[0] || payload != payloadLength((int) seq)) {
                            bad[0]++; // damaged, out of order, twice, or after a lost one
                        }
                        received[0]++;
                    });
                    if (received[0] >= WARM_UP) {
                        // Per round of some tens of frames: a per-frame (or per-wake-up) allocation shows in every
                        // round, a one-off (a deoptimisation re-materialising objects, a lazy initialisation) in few.
                        long allocated = threads.getThreadAllocatedBytes(worker);
                        if (allocatedBefore >= 0) {
                            rounds++;
                            allocatingRounds += allocated != allocatedBefore ? 1 : 0;
                        }
                        allocatedBefore = allocated;
                    }
                    g.postRx(0);
                    g.awaitRx(0, 10_000_000L);
                }
                assertEquals(0, bad[0], "frames damaged, out of order, duplicated or lost");
                assertEquals(TO_GUEST, received[0], "frames the guest received");
                NetStats s = device.stats(0);
                assertEquals(TO_GUEST, s.toGuestPackets(), s.toString());
                assertEquals(0, s.toGuestDrops(), s.toString());
                assertTrue(s.rxRingEmpty() > 0, "the worker held frames while the ring was full: " + s);
                if (ioUringWorks()) {
                    assertTrue(s.tapReadCalls() < TO_GUEST / 2, "several frames per system call: " + s);
                } else {
                    assertTrue(s.tapReadCalls() > TO_GUEST, "a read(2) per frame, and one per drain: " + s);
                }
                assertTrue(rounds >= 10, rounds + " rounds");
                assertTrue(allocatingRounds <= rounds / 4, "the worker allocated in " + allocatingRounds + " of "
                        + rounds + " rounds");

                // ---- guest to port ----
                MemorySegment got = arena.allocate(4096);
                int sent = 0;
                int read = 0;
                deadline = System.nanoTime() + 60_000_000_000L;
                while (read < FROM_GUEST && System.nanoTime() < deadline) {
                    while (sent < FROM_GUEST && g.send(0, frame, 0,
                            UdpFrames.udpFrame(frame, 0, MAC, MAC, IP, IP, 3, 4, payloadLength(sent), sent))) {
                        sent++;
                    }
                    g.kickTx(0);
                    g.reapTx(0);
                    long n;
                    while ((n = port.second().read(got, got.byteSize())) > 0) {
                        long eth = NetFeatures.HDR_LEN;
                        int payload = (int) (n - eth - UdpFrames.HEADERS);
                        long seq = payload < UdpFrames.MIN_PAYLOAD ? -1 : UdpFrames.check(got, eth + UdpFrames.HEADERS, payload);
                        assertEquals(read, seq, "frames arrive whole and in order");
                        assertEquals(payloadLength(read), payload);
                        read++;
                    }
                    if (n == -Errno.EAGAIN) {
                        Thread.onSpinWait();
                    } else {
                        assertEquals(-Errno.EAGAIN, n, "read of the port");
                    }
                }
                assertEquals(FROM_GUEST, read);
                s = device.stats(0);
                assertEquals(FROM_GUEST, s.fromGuestPackets(), s.toString());
                assertEquals(0, s.fromGuestDrops(), s.toString());
                assertEquals(TO_GUEST, s.toGuestPackets(), "nothing more to the guest: " + s);
            } finally {
                c.backend().awaitEnd();
            }
        }
    }
}
