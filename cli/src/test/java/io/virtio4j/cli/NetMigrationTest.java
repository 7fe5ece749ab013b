package io.virtio4j.cli;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Live migration of a Linux guest that keeps pinging through serve net, with real QEMU
 * ({@code peers/qemu-migrate.sh --device net}): two QEMU processes (TCG, memfd guest RAM), each on its own
 * {@code serve net --mode macswap}, the destination started with {@code -incoming}. Every echo request goes out
 * through the back-end and comes back to the guest, whose kernel answers it, so ping counts a reply per frame the
 * back-end returned intact. The counters of the guest and of both back-ends add up exactly: a frame in flight at the
 * switch is the source's or the destination's, never both nor neither. The migration is capped at 32 MiB/s (QEMU's
 * default) so that it lasts a few seconds of pings.
 *
 * <p>No negative control: the guest reads a received frame within a millisecond, so only frames delivered between
 * the vCPU's stop and the rings' stop are read on the destination, too few for unmarked receive data to show
 * reliably (see the script's header).
 */
class NetMigrationTest {
    private static final String BANDWIDTH = "32";

    private static String line(PeerRuns.Outcome r, String prefix) {
        return r.output().lines().filter(l -> l.startsWith(prefix)).reduce((a, b) -> b)
                .orElseThrow(() -> new AssertionError("no " + prefix + " line in\n" + r.output()));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"split", "packed"})
    void aPingingGuestMovesToAnotherQemuAndEveryFrameIsCountedOnceOnOneSideOfTheSwitch(String ring)
            throws IOException, InterruptedException {
        boolean packed = ring.equals("packed");
        String cmd = PeerRuns.cli() + " serve net --socket {sock} --mode macswap --notify notify";
        List<String> argv = new ArrayList<>(List.of("bash", PeerRuns.script("qemu-migrate.sh").toString(),
                "--device", "net", "--backend-cmd", cmd, "--bandwidth", BANDWIDTH, "--timeout", "120"));
        if (packed) {
            argv.add("--packed");
        }
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(4), argv);
        assertEquals(0, r.exit(), r.output());
        assertTrue(line(r, "MIGRATE ").startsWith("MIGRATE status=completed "), r.output());
        String src = line(r, "BACKEND src ");
        String dst = line(r, "BACKEND dst ");
        String guest = line(r, "GUEST ");
        long guestTx = PeerRuns.field(guest, "tx_packets");
        long guestRx = PeerRuns.field(guest, "rx_packets");
        // the counters are the proof, checked here too, not only in the script
        assertEquals(guestTx, PeerRuns.field(src, "RX-packets") + PeerRuns.field(dst, "RX-packets"), r.output());
        assertEquals(guestRx, PeerRuns.field(src, "TX-packets") + PeerRuns.field(dst, "TX-packets"), r.output());
        assertEquals(PeerRuns.field(src, "RX-packets") + PeerRuns.field(dst, "RX-packets"),
                PeerRuns.field(src, "TX-packets") + PeerRuns.field(dst, "TX-packets")
                        + PeerRuns.field(src, "RX-dropped") + PeerRuns.field(dst, "RX-dropped"), r.output());
        // both back-ends carried traffic: the source before the move, the destination after it
        assertTrue(PeerRuns.field(src, "TX-packets") > 0, r.output());
        assertTrue(PeerRuns.field(dst, "TX-packets") > 0, r.output());
        assertTrue(PeerRuns.field(guest, "dst_rx") > 0, r.output());
        // every echo request came back answered once
        assertEquals(guestTx, PeerRuns.field(guest, "ping_sent"), r.output());
        assertEquals(guestRx, PeerRuns.field(guest, "ping_received"), r.output());
        assertEquals(0, PeerRuns.field(guest, "ping_dup"), r.output());
        assertTrue(line(r, "CHECK ").startsWith("CHECK ok migrate=completed tx=ok rx=ok dropped=ok dst=ok ping=ok dst_console=ok"),
                r.output());
        assertTrue(line(r, "CHECK ").endsWith(" packed=" + (packed ? "1/1" : "0/0")), r.output());
    }
}
