package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.DatagramPair;
import io.virtio4j.os.Errno;
import io.virtio4j.os.netlab.UdpFrames;
import io.virtio4j.vhost.backend.InProcessBackend;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.List;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The transmit side of the discipline where a port pushes back. A tap practically never does (the kernel consumes
 * a written frame within the write), so the port here is a datagram socket pair whose far end this test reads
 * slowly: writes hit EAGAIN, the frame goes back to the ring, the worker waits for EPOLLOUT (asleep, not
 * spinning) and then sends everything, in order, nothing lost.
 */
class TxPollTest {
    private static final int FRAMES = 600;

    @ParameterizedTest
    @EnumSource(TapPolling.TxPoll.class)
    void aFullPortPushesBackWithoutLossAndWithoutSpinning(TapPolling.TxPoll txPoll) throws Exception {
        try (DatagramPair port = DatagramPair.create(); Arena arena = Arena.ofConfined()) {
            NetDevice device = NetDevice.overPorts(new NetDevice.Options(1,
                    new NetMode.Tap("dgram", new TapPolling(true, txPoll)), NotificationMode.NOTIFY, 0, 64, new int[0],
                    TapRig.GUEST_MAC_BYTES, 1500), List.of(port.first()));
            InProcessBackend.Connected c = InProcessBackend.start(device, "txpoll");
            try (device; NetDriver g = NetDriver.start(c.frontend(), NetDriver.Config.defaults())) {
                MemorySegment frame = arena.allocate(2048);
                MemorySegment got = arena.allocate(4096);
                byte[] mac = UdpFrames.mac("02:00:00:00:00:01");
                byte[] ip = UdpFrames.ipv4("169.254.1.1");
                int sent = 0;
                int read = 0;
                boolean pausedOnce = false;
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (read < FRAMES && System.nanoTime() < deadline) {
                    while (sent < FRAMES && g.send(0, frame, 0,
                            UdpFrames.udpFrame(frame, 0, mac, mac, ip, ip, 1, 2, 1000, sent))) {
                        sent++;
                    }
                    g.kickTx(0);
                    g.reapTx(0);
                    if (!pausedOnce && device.stats(0).txEagain() > 0) {
                        // The port is full and the worker waits for EPOLLOUT: it must sleep meanwhile.
                        pausedOnce = true;
                        long id = device.workerThreadId(0);
                        long cpu0 = ManagementFactory.getThreadMXBean().getThreadCpuTime(id);
                        long t0 = System.nanoTime();
                        Thread.sleep(1000);
                        double share = (double) (ManagementFactory.getThreadMXBean().getThreadCpuTime(id) - cpu0)
                                / (System.nanoTime() - t0);
                        assertTrue(share < 0.2, String.format("worker used %.1f%% of a CPU while the port was full: %s",
                                100 * share, device.stats(0)));
                    }
                    // Read slowly: a few frames per round, so the port keeps pushing back.
                    for (int i = 0; i < 8 && read < FRAMES; i++) {
                        long n = port.second().read(got, got.byteSize());
                        if (n == -Errno.EAGAIN) {
                            Thread.sleep(1);
                            break;
                        }
                        long seq = UdpFrames.check(got, NetFeatures.HDR_LEN + UdpFrames.HEADERS, 1000);
                        assertEquals(read, seq, "frames arrive whole and in order");
                        read++;
                    }
                }
                assertEquals(FRAMES, read);
                NetStats s = device.stats(0);
                assertTrue(pausedOnce && s.txEagain() > 0, "the port pushed back: " + s);
                assertEquals(FRAMES, s.fromGuestPackets(), s.toString());
                assertEquals(0, s.fromGuestDrops(), s.toString());
            } finally {
                c.backend().awaitEnd();
            }
        }
    }
}
