package io.virtio4j.cli;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code serve net} against real peers, through {@code peers/selftest.sh}: DPDK testpmd's virtio-user driver
 * (txonly into rxonly, exact frames through macswap, 1500-byte frames through loopback on a packed ring...) and
 * a real Linux guest under QEMU (ping and pktgen, rxonly and macswap, split and packed rings), and {@code drive net},
 * our front-end, against DPDK's own back-end (split, packed with IN_ORDER). Every check compares the counters of
 * both sides exactly. The peers are installed by {@code peers/install.sh}, which {@code ./virtio4j test} runs
 * first (as root).
 */
class RealPeersTest {

    @Test
    void serveNetPassesEveryExactCounterCheckAgainstDpdkAndALinuxGuest() throws IOException, InterruptedException {
        String backend = PeerRuns.cli() + " serve net --socket {sock} --mode {mode}";
        String driver = PeerRuns.cli() + " drive net --socket {sock}";
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(20),
                List.of("bash", PeerRuns.script("selftest.sh").toString(), "--backend", backend, "--driver", driver));
        assertEquals(0, r.exit(), "selftest failed:\n" + r.output());
        assertTrue(r.output().lines().anyMatch(l -> l.matches("selftest: [1-9][0-9]* passed, 0 failed")), r.output());
    }
}
