package io.virtio4j.devices.net;

import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.devices.net.GuestTraffic.addRawRx;
import static io.virtio4j.devices.net.GuestTraffic.addRawTx;
import static io.virtio4j.devices.net.GuestTraffic.connect;
import static io.virtio4j.devices.net.NetTrafficTest.echoAndCheck;
import static io.virtio4j.devices.net.NetTrafficTest.withBackend;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * virtio-net over a memory table that cuts the driver's one memfd into three adjacent regions (as QEMU may cut guest
 * RAM): a transmitted frame whose buffer crosses one cut and a receive buffer that crosses the other reach the
 * device as two elements each, and the reflected frame arrives intact.
 */
class NetRegionBoundaryTest {
    /** A hang guard, not a timing assertion. */
    private static final long PATIENCE_NANOS = TimeUnit.SECONDS.toNanos(20);

    @Test
    void aFrameAcrossOneRegionBoundaryIsReflectedIntoABufferAcrossAnother() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                Random rnd = new Random(31);
                // Nothing posted before: the receive ring's only buffer is the one that crosses cut2.
                // The transmit pool is carved last: its last pages are free while the test sends nothing else.
                long size = g.memory().byteSize();
                long cut1 = size - 2 * 4096;
                long cut2 = size - 4096;
                long user = g.config().userBase();
                VhostUserFrontend fe = g.frontend();
                fe.setMemTable(List.of(
                        new VhostUserFrontend.Region(g.gpa(0), cut1, user, 0, g.memfd()),
                        new VhostUserFrontend.Region(g.gpa(cut1), cut2 - cut1, user + cut1, cut1, g.memfd()),
                        new VhostUserFrontend.Region(g.gpa(cut2), size - cut2, user + cut2, cut2, g.memfd())));

                byte[] frame = GuestTraffic.randomFrame(rnd, 200);
                long tx = cut1 - 50; // header and the first 38 frame bytes below cut1, the rest above
                MemorySegment mem = g.memory();
                mem.asSlice(tx, NetFeatures.HDR_LEN).fill((byte) 0);
                MemorySegment.copy(frame, 0, mem, ValueLayout.JAVA_BYTE, tx + NetFeatures.HDR_LEN, frame.length);
                long rx = cut2 - 100; // the received header and 88 frame bytes below cut2, the rest above
                mem.asSlice(rx, 1600).fill((byte) 0xEE);
                int rxRing = NetDriver.rxRing(0);
                addRawRx(g, 0, g.gpa(rx), 1600);
                g.queue(rxRing).kick();
                addRawTx(g, 0, g.gpa(tx), NetFeatures.HDR_LEN + frame.length);
                g.kickTx(0);

                DriverQueue rxQueue = g.queue(rxRing);
                long deadline = System.nanoTime() + PATIENCE_NANOS;
                while (rxQueue.pollUsed() == null) {
                    assertTrue(System.nanoTime() - deadline < 0, "the frame did not come back");
                    Thread.onSpinWait();
                }
                assertEquals(NetFeatures.HDR_LEN + frame.length, rxQueue.lastUsedLength());
                assertArrayEquals(new byte[NetFeatures.HDR_NUM_BUFFERS],
                        mem.asSlice(rx, NetFeatures.HDR_NUM_BUFFERS).toArray(ValueLayout.JAVA_BYTE), "virtio_net_hdr: no offloads");
                assertArrayEquals(frame, mem.asSlice(rx + NetFeatures.HDR_LEN, frame.length).toArray(ValueLayout.JAVA_BYTE),
                        "the frame came back intact across both boundaries");
                assertEquals((byte) 0xEE, mem.get(ValueLayout.JAVA_BYTE, rx + NetFeatures.HDR_LEN + frame.length),
                        "nothing written past the frame");
                // and the split table serves ordinary traffic
                echoAndCheck(g, 0, 100, 50, 0, false, rnd);
            }
        });
    }
}
