package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Live migration of a Linux guest that keeps talking through serve net, with real QEMU
 * ({@code peers/qemu-migrate.sh --device net}): two QEMU processes (TCG, memfd guest RAM), each on its own
 * {@code serve net --mode macswap}, the destination started with {@code -incoming}. The guest talks to itself through
 * the back-end: it pings (its kernel answers every request that comes back), and writes a TCP stream of numbered lines
 * whose reader stays stopped until after the move, so the bytes the back-end wrote into the receive buffers during the
 * migration are read, and compared, on the destination. The counters of the guest and of both back-ends add up
 * exactly: a frame in flight at the switch is the source's or the destination's, never both nor neither. The negative
 * control proves the stream check can fail: a source back-end that does not mark received frames in the dirty log
 * (serve net's test-only --debug-no-dirty-log) leaves stale lines on the destination. The migration is capped at
 * 32 MiB/s (QEMU's default) so that it lasts a few seconds of traffic.
 */
class NetMigrationTest {
    private static PeerRuns.Outcome migrate(boolean logReceived, boolean packed) throws IOException, InterruptedException {
        return PeerRuns.migrate("net", PeerRuns.cli() + " serve net --socket {sock} --mode macswap --notify notify",
                logReceived, packed);
    }

    /** The frame counts of the guest and of both back-ends add up exactly, and both back-ends carried traffic. */
    private static void assertCountersAddUp(PeerRuns.Outcome r) {
        String src = r.line("BACKEND src ");
        String dst = r.line("BACKEND dst ");
        String guest = r.line("GUEST ");
        long srcRx = PeerRuns.field(src, "RX-packets");
        long dstRx = PeerRuns.field(dst, "RX-packets");
        long srcTx = PeerRuns.field(src, "TX-packets");
        long dstTx = PeerRuns.field(dst, "TX-packets");
        assertEquals(PeerRuns.field(guest, "tx_packets"), srcRx + dstRx, r.output());
        assertEquals(PeerRuns.field(guest, "rx_packets"), srcTx + dstTx, r.output());
        assertEquals(srcRx + dstRx, srcTx + dstTx + PeerRuns.field(src, "RX-dropped") + PeerRuns.field(dst, "RX-dropped"),
                r.output());
        // the source before the move, the destination after it, and the guest received frames on the destination
        assertTrue(srcTx > 0, r.output());
        assertTrue(dstTx > 0, r.output());
        assertTrue(PeerRuns.field(guest, "dst_rx") > 0, r.output());
        // every echo request came back answered once
        assertTrue(PeerRuns.field(guest, "ping_sent") > 0, r.output());
        assertEquals(PeerRuns.field(guest, "ping_sent"), PeerRuns.field(guest, "ping_received"), r.output());
        assertEquals(0, PeerRuns.field(guest, "ping_dup"), r.output());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"split", "packed"})
    void aGuestTalkingThroughServeNetMovesToAnotherQemuAndEveryFrameIsCountedOnceAndArrivesIntact(String ring)
            throws IOException, InterruptedException {
        boolean packed = ring.equals("packed");
        PeerRuns.Outcome r = migrate(true, packed);
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.line("MIGRATE ").startsWith("MIGRATE status=completed "), r.output());
        assertCountersAddUp(r);
        String guest = r.line("GUEST ");
        // the check covers lines the back-end wrote while the migration ran, or it proves nothing
        assertTrue(PeerRuns.field(guest, "during") > 0, r.output());
        assertEquals(0, PeerRuns.field(guest, "stream_bad"), r.output());
        assertTrue(r.line("CHECK ").startsWith(
                "CHECK ok migrate=completed tx=ok rx=ok dropped=ok dst=ok ping=ok stream=ok dst_console=ok"), r.output());
        assertTrue(r.line("CHECK ").endsWith(" packed=" + (packed ? "1/1" : "0/0")), r.output());
    }

    @Test
    void withoutTheReceivedFramesInTheDirtyLogTheGuestFindsStaleStreamLinesAfterTheMove() throws IOException, InterruptedException {
        PeerRuns.Outcome r = migrate(false, false);
        assertTrue(r.line("MIGRATE ").startsWith("MIGRATE status=completed "), r.output());
        // the frames themselves are all counted and answered: only the bytes left in receive buffers are wrong
        assertCountersAddUp(r);
        assertTrue(PeerRuns.field(r.line("GUEST "), "stream_bad") > 0, r.output());
        assertTrue(r.line("CHECK ").startsWith(
                "CHECK FAIL migrate=completed tx=ok rx=ok dropped=ok dst=ok ping=ok stream=FAIL dst_console=ok"), r.output());
        assertEquals(1, r.exit(), r.output());
    }
}
