package io.virtio4j.devices.net;

import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.netlab.TapNamespace;
import io.virtio4j.os.netlab.UdpFrames;
import io.virtio4j.os.netlab.UdpTool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real traffic through a tap in both directions, each datagram's payload checksummed end to end: the kernel's UDP
 * stack in the namespace on one side, our guest on the other.
 */
class TapTrafficTest {
    private static final int TO_GUEST = 400;
    private static final int FROM_GUEST = 300;

    @BeforeAll
    static void taps() {
        TapRig.assumeTapsWork();
    }

    static Stream<Arguments> disciplines() {
        return Stream.of(
                Arguments.of(TapPolling.current(), 1024, true),
                Arguments.of(TapPolling.old(), 1024, true),
                Arguments.of(TapPolling.current(), 2048, false),
                Arguments.of(new TapPolling(true, TapPolling.TxPoll.ALWAYS), 1536, true));
    }

    @ParameterizedTest
    @MethodSource("disciplines")
    void datagramsArriveIntactBothWays(TapPolling polling, int rxBuffer, boolean mergeable) throws Exception {
        NetDriver.Config cfg = NetDriver.Config.defaults().withRxBufferSize(rxBuffer).withMergeable(mergeable);
        try (TapRig rig = TapRig.start(1, polling, 64, cfg); Arena arena = Arena.ofConfined()) {
            NetDriver g = rig.guest;

            // ---- tap to guest: the namespace's kernel sends, the guest checks every payload ----
            g.postRx(0);
            Process sender = rig.tool("send", TapNamespace.GUEST_IP, "5000", Integer.toString(TO_GUEST), "2000", "14",
                    "1400");
            BitSet seen = new BitSet();
            int[] bad = new int[1];
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (seen.cardinality() < TO_GUEST && System.nanoTime() < deadline) {
                g.receive(0, (frame, length, numBuffers) -> {
                    long eth = NetFeatures.HDR_LEN;
                    int payload = UdpFrames.udpPayloadLength(frame, eth, length - eth, 5000);
                    if (payload < 0) {
                        return; // not ours
                    }
                    long seq = UdpFrames.check(frame, eth + UdpFrames.HEADERS, payload);
                    int expectBuffers = mergeable ? (int) ((length + rxBuffer - 1) / rxBuffer) : 1;
                    if (seq < 0 || payload != UdpTool.lengthOf((int) seq, 14, 1400) || numBuffers != expectBuffers) {
                        bad[0]++;
                    } else {
                        seen.set((int) seq);
                    }
                });
                g.postRx(0);
                g.awaitRx(0, 100_000_000L);
            }
            assertEquals("sent " + TO_GUEST, TapRig.awaitLine(sender, "sent", 10_000));
            TapRig.finish(sender);
            assertEquals(0, bad[0], "damaged frames or wrong num_buffers");
            assertEquals(TO_GUEST, seen.cardinality(), "distinct intact datagrams received by the guest");

            // ---- guest to tap: the guest sends, the namespace's UDP socket checks every payload ----
            Process receiver = rig.tool("recv", "6000", Integer.toString(FROM_GUEST), "30000");
            TapRig.awaitLine(receiver, "ready", 20_000);
            MemorySegment frame = arena.allocate(2048);
            byte[] tapMac = UdpFrames.mac(TapNamespace.TAP_MAC);
            byte[] guestIp = UdpFrames.ipv4(TapNamespace.GUEST_IP);
            byte[] tapIp = UdpFrames.ipv4(TapNamespace.TAP_IP);
            for (int seq = 0; seq < FROM_GUEST; seq++) {
                int len = UdpFrames.udpFrame(frame, 0, tapMac, TapRig.GUEST_MAC_BYTES, guestIp, tapIp, 7000, 6000,
                        UdpTool.lengthOf(seq, 14, 1400), seq);
                while (!g.send(0, frame, 0, len)) {
                    g.kickTx(0);
                    g.awaitTx(0, 100_000_000L);
                    g.reapTx(0);
                }
                if (seq % 16 == 15) {
                    g.kickTx(0);
                    Thread.sleep(1); // pace a little: the far socket is read by a busy-ish loop on a 2-CPU machine
                }
            }
            g.kickTx(0);
            deadline = System.nanoTime() + 20_000_000_000L;
            while (g.txInFlight(0) > 0 && System.nanoTime() < deadline) {
                g.awaitTx(0, 100_000_000L);
                g.reapTx(0);
            }
            assertEquals(0, g.txInFlight(0), "every transmit buffer came back");
            String got = TapRig.awaitLine(receiver, "received", 35_000);
            TapRig.finish(receiver);
            assertEquals("received " + FROM_GUEST + " bad 0 distinct " + FROM_GUEST, got);

            NetStats s = rig.device.stats(0);
            assertEquals(FROM_GUEST, s.fromGuestPackets(), s.toString());
            assertEquals(0, s.fromGuestDrops(), s.toString());
            assertTrue(s.toGuestPackets() >= TO_GUEST, s.toString());
            assertEquals(0, s.toGuestDrops(), s.toString());
        }
    }
}
