package io.virtio4j.cli;

import io.virtio4j.testkit.FlightRecording;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static io.virtio4j.cli.PeerRuns.field;
import static io.virtio4j.cli.PeerRuns.word;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The short form of the cost measurement ({@code peers/bench-dpdk-vhost.sh --persistent}): DPDK virtio-user into two
 * {@code serve net} back-ends kept running across reps, A plain, B with {@code --metrics} and a flight recording, each
 * JVM pair serving a warm-up and then one rep (restarted every rep), with 1-second windows. What it checks does not
 * depend on speed: the order alternates (A B, then B A) and each rep runs in the JVM pair it says; B's counters scraped
 * from its metrics before and after each run equal what the driver sent in it; every back-end's RESULT at its stop
 * equals everything the drivers sent it, warm-up included; the back-end not being measured is stopped (no CPU); the
 * summaries come per JVM pair, pooled and over the pairs' means; B's recording holds its sessions.
 */
class PersistentBackendsBenchTest {
    @TempDir
    Path dir;

    @Test
    void keptBackEndsServeEveryRepExactlyInAlternatingOrder() throws Exception {
        Path jfr = dir.resolve("b.jfr");
        String cli = PeerRuns.cli();
        String recorded = cli.replaceFirst(" ", " -XX:StartFlightRecording:filename=" + jfr + " ");
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(5), List.of("bash",
                PeerRuns.script("bench-dpdk-vhost.sh").toString(), "--persistent", "--reps", "2", "--restart-every", "1",
                "--backend-warmup", "1", "--duration", "1", "--sizes", "64", "--v4j", cli,
                "--backend-a", cli + " serve net --socket {sock} --mode rxonly",
                "--backend-b", recorded + " serve net --socket {sock} --mode rxonly --metrics unix:{metrics}"));
        assertEquals(0, r.exit(), "bench-dpdk-vhost --persistent failed:\n" + r.output());

        List<String> runs = r.output().lines().filter(l -> l.startsWith("RUN ")).toList();
        assertEquals(List.of("1 1 AB A", "1 1 AB B", "2 2 BA B", "2 2 BA A"), runs.stream()
                .map(l -> word(l, "rep") + " " + word(l, "jvm") + " " + word(l, "order") + " " + word(l, "backend"))
                .toList(), r.output());
        for (String run : runs) {
            long tx = field(run, "tx_total");
            assertTrue(tx > 0, run);
            if (word(run, "backend").equals("B")) {
                assertEquals(tx, field(run, "backend_rx"), run);
                assertEquals("yes", word(run, "exact"), run);
            } else {
                assertEquals("na", word(run, "backend_rx"), "A serves no metrics: " + run);
                assertEquals("n/a", word(run, "exact"), run);
            }
            // SIGSTOPped while the other one is measured: not one clock tick
            assertEquals("0.00", word(run, "other_cpu"), run);
        }

        List<String> backends = r.output().lines().filter(l -> l.startsWith("BACKEND ")).toList();
        assertEquals(List.of("1 A", "1 B", "2 A", "2 B"), backends.stream()
                .map(l -> word(l, "jvm") + " " + word(l, "backend")).toList(), r.output());
        for (String b : backends) {
            assertEquals("yes", word(b, "exact"), b);
            long measured = runs.stream().filter(l -> word(l, "jvm").equals(word(b, "jvm"))
                    && word(l, "backend").equals(word(b, "backend"))).mapToLong(l -> field(l, "tx_total")).sum();
            // its RESULT counts the warm-up's frames besides the measured run's
            assertTrue(field(b, "rx_total") > measured, b);
            assertEquals(field(b, "driver_tx_total"), field(b, "rx_total"), b);
        }

        for (String jvm : List.of("1", "2", "all", "means")) {
            String prefix = "SUMMARY size=64 jvm=" + jvm + " figure=pps pairs=" + (jvm.length() == 1 ? 1 : 2) + " ";
            String s = r.output().lines().filter(l -> l.startsWith(prefix)).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + prefix + " in\n" + r.output()));
            for (String key : List.of("ratio_B_over_A", "ci95_low", "ci95_high", "half_width_pct")) {
                assertFalse(word(s, key).isEmpty(), s);
            }
        }

        assertTrue(Files.size(jfr) > 0, "B's JVM wrote no recording");
        assertFalse(FlightRecording.named(FlightRecording.read(jfr), "FrontendConnected").isEmpty(),
                "B's recording holds no session");
    }
}
