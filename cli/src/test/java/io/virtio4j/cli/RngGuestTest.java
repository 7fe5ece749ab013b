package io.virtio4j.cli;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real Linux guest (QEMU TCG, vhost-user-rng-pci) on {@code serve rng}, through {@code peers/qemu-guest-rng.sh}: the
 * back-end serves the bytes of a random file, the guest's virtio_rng driver becomes its hwrng, and the guest reads
 * /dev/hwrng twice. The host finds every 64-byte read in the file, each later in it than the one before, all within
 * what the back-end reports it served: the bytes came from our back-end, and the second read is not the first again
 * (the stream flows). The kernel takes bytes of the device itself (at registration and from its khwrngd thread), so
 * the reads need not be contiguous: the script reports what it skipped. On a split and on a packed ring.
 */
class RngGuestTest {
    private static final int BYTES = 8192;

    @ParameterizedTest(name = "{0} ring")
    @CsvSource({"split", "packed"})
    void aLinuxGuestReadsTheBackEndsBytesFromDevHwrng(String ring) throws IOException, InterruptedException {
        String cmd = PeerRuns.cli() + " serve rng --socket {sock} --source {source}";
        List<String> argv = new ArrayList<>(List.of("bash", PeerRuns.script("qemu-guest-rng.sh").toString(),
                "--backend-cmd", cmd, "--bytes", Integer.toString(BYTES), "--timeout", "180"));
        if (ring.equals("packed")) {
            argv.add("--packed");
        }
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(4), argv);
        assertEquals(0, r.exit(), r.output());
        int pieces = 2 * BYTES / 64;
        String check = r.line("CHECK ");
        assertTrue(check.startsWith("CHECK ok "), check);
        assertTrue(check.contains(" found=" + pieces + "/" + pieces + " ordered=yes "), check);
        assertTrue(check.contains(" differ=yes "), check);
        assertTrue(check.endsWith(" packed=" + (ring.equals("packed") ? "1/1" : "0/0")), check);
        assertTrue(PeerRuns.field(check, "served") >= 2L * BYTES, "the back-end served both reads: " + check);
    }
}
