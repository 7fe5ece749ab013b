package io.virtio4j.devices.net.driver;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.stats.QueueCounters;
import io.virtio4j.devices.net.NetDevice;
import io.virtio4j.devices.net.NetFeatures;
import io.virtio4j.devices.net.NetMode;
import io.virtio4j.vhost.backend.InProcessBackend;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NetDriver.Config#publication()} reaches every ring: frames sent in batches of different sizes, one kick
 * after each, through a loopback back-end, come back intact and in order (a CRC over every frame sent against one
 * over every frame received), and the transmit ring published as its policy says: once per frame (eager), once per
 * kick (lazy), or in between (adaptive). Eager and lazy go through a back-end that sleeps on kicks; adaptive through
 * one that polls. On a split ring that one never asks for a kick again (EVENT_IDX: its avail_event stays behind), so
 * the adaptive interval grows from the second kick on and the ring publishes less often than once per frame. A packed
 * ring's polling device leaves its event suppression enabled today (every batch is kicked, the interval stays at its
 * minimum), so there adaptive is only bounded by the other two.
 */
class NetDriverPublicationTest {
    private static final int BATCHES = 24;
    private static final long WAIT_NANOS = 10_000_000_000L;

    /** Frames in batch {@code b}: 1 to 64, different from batch to batch. */
    private static int batchSize(int b) {
        return 1 + (b * 37) % 64;
    }

    /** CRC of every frame received, in order, and their count. */
    private static final class Checksum implements NetDriver.FrameHandler {
        final CRC32 crc = new CRC32();
        long frames;

        @Override
        public void frame(MemorySegment frame, long length, int numBuffers) {
            crc.update(frame.asSlice(NetFeatures.HDR_LEN, length - NetFeatures.HDR_LEN).asByteBuffer());
            frames++;
        }
    }

    @ParameterizedTest
    @CsvSource({"SPLIT, EAGER", "SPLIT, LAZY", "SPLIT, ADAPTIVE", "PACKED, EAGER", "PACKED, LAZY", "PACKED, ADAPTIVE"})
    void everyFrameComesBackAndTheTransmitRingPublishesAsConfigured(RingFormat format, AvailPublication publication)
            throws Exception {
        NotificationMode mode = publication == AvailPublication.ADAPTIVE ? NotificationMode.POLL : NotificationMode.NOTIFY;
        NetDevice device = new NetDevice(new NetDevice.Options(1, NetMode.LOOPBACK, mode, 0, 64,
                new int[0], new byte[] {0x52, 0x54, 0x00, 0x12, 0x34, 0x56}, 1500));
        InProcessBackend.Connected c = InProcessBackend.start(device, "driver-publication");
        CRC32 sentCrc = new CRC32();
        long sent = 0;
        Checksum received = new Checksum();
        try (device; Arena arena = Arena.ofConfined();
             NetDriver d = NetDriver.start(c.frontend(),
                     NetDriver.Config.defaults().withFormat(format).withPublication(publication))) {
            assertEquals(publication, d.config().publication());
            MemorySegment frame = arena.allocate(100);
            for (int b = 0; b < BATCHES; b++) {
                d.postRx(0);
                for (int i = 0; i < batchSize(b); i++) {
                    for (int j = 0; j < frame.byteSize(); j++) {
                        frame.set(ValueLayout.JAVA_BYTE, j, (byte) (sent * 31 + j));
                    }
                    assertTrue(d.send(0, frame, 0, (int) frame.byteSize()), "a free transmit slot");
                    sentCrc.update(frame.asByteBuffer());
                    sent++;
                }
                d.kickTx(0);
                while (received.frames < sent) {
                    if (d.receive(0, received) == 0 && !d.awaitRx(0, WAIT_NANOS)) {
                        throw new AssertionError("frame " + received.frames + " not back within 10 s (" + format + ", "
                                + publication + ")");
                    }
                }
                while (d.txInFlight(0) > 0) {
                    if (d.reapTx(0) == 0 && !d.awaitTx(0, WAIT_NANOS)) {
                        throw new AssertionError("transmit buffers not returned within 10 s");
                    }
                }
            }
            QueueCounters tx = d.queue(NetDriver.txRing(0)).counters();
            assertEquals(sent, tx.buffers);
            switch (publication) {
                case EAGER -> assertEquals(sent, tx.availIdxWrites, "one publication per frame");
                case LAZY -> assertEquals(BATCHES, tx.availIdxWrites, "one publication per kick");
                case ADAPTIVE -> assertTrue(tx.availIdxWrites >= BATCHES
                                && (format == RingFormat.SPLIT ? tx.availIdxWrites < sent : tx.availIdxWrites <= sent),
                        "at least once per kick, less than once per frame: " + tx.availIdxWrites + " for " + sent
                                + " frames, kicks " + tx.kicksSent + " sent, " + tx.kicksSuppressed + " suppressed");
            }
        } finally {
            c.backend().awaitEnd();
        }
        assertEquals(sent, received.frames);
        assertEquals(sentCrc.getValue(), received.crc.getValue(), "the frames came back as sent");
    }
}
