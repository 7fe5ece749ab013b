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
 * back-ends kept running across reps, A DPDK's own (testpmd-vhost.sh, whose testpmd runs in a session of its own), B
 * {@code serve net} with {@code --metrics} and a flight recording, two JVM pairs of two reps each (AB, BA), each pair
 * warmed first, with 1-second windows. What it checks does not depend on speed: the order alternates inside each JVM
 * pair and each rep runs in the JVM pair it says; B's counters scraped from its metrics before and after each run equal
 * what the driver sent in it; every back-end's RESULT at its stop equals everything the drivers sent it, warm-up
 * included; the back-end not being measured is stopped, all of its process tree (its processes in state T, no CPU);
 * the summaries come per JVM pair, pooled and over the pairs' means, each with an interval; B's recording holds its
 * sessions.
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
                PeerRuns.script("bench-dpdk-vhost.sh").toString(), "--persistent", "--reps", "4", "--restart-every", "2",
                "--backend-warmup", "1", "--duration", "1", "--sizes", "64", "--v4j", cli,
                "--backend-b", recorded + " serve net --socket {sock} --mode rxonly --metrics unix:{metrics}"));
        assertEquals(0, r.exit(), "bench-dpdk-vhost --persistent failed:\n" + r.output());

        List<String> runs = r.output().lines().filter(l -> l.startsWith("RUN ")).toList();
        assertEquals(List.of("1 1 AB A", "1 1 AB B", "2 1 BA B", "2 1 BA A", "3 2 AB A", "3 2 AB B", "4 2 BA B",
                "4 2 BA A"), runs.stream()
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
            // the other back-end, all of its processes (DPDK's testpmd in its own session too), stopped: state T, and
            // not one clock tick while this one was measured (the state tells a stopped one from an idle one)
            assertEquals("T", word(run, "other_state"), run);
            assertEquals("0.00", word(run, "other_cpu"), run);
        }

        List<String> backends = r.output().lines().filter(l -> l.startsWith("BACKEND ")).toList();
        assertEquals(List.of("1 A", "1 B", "2 A", "2 B"), backends.stream()
                .map(l -> word(l, "jvm") + " " + word(l, "backend")).toList(), r.output());
        for (String b : backends) {
            assertEquals("yes", word(b, "exact"), b);
            long measured = runs.stream().filter(l -> word(l, "jvm").equals(word(b, "jvm"))
                    && word(l, "backend").equals(word(b, "backend"))).mapToLong(l -> field(l, "tx_total")).sum();
            // its RESULT counts the warm-up's frames besides the measured runs'
            assertTrue(field(b, "rx_total") > measured, b);
            assertEquals(field(b, "driver_tx_total"), field(b, "rx_total"), b);
        }

        // the medians of four reps (the mean of the middle two) with all their digits, never 9.91733e+06
        String medians = r.line("SUMMARY size=64 reps=4 ");
        for (String key : List.of("A_median_pps", "B_median_pps")) {
            assertTrue(word(medians, key).matches("\\d+(\\.\\d+)?"), key + " in " + medians);
        }
        for (String jvm : List.of("1", "2", "all", "means")) {
            String prefix = "SUMMARY size=64 jvm=" + jvm + " figure=pps pairs="
                    + (jvm.length() == 1 ? "2 " : jvm.equals("all") ? "4 " : "4 groups=2 ");
            String s = r.output().lines().filter(l -> l.startsWith(prefix)).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + prefix + " in\n" + r.output()));
            // two values at least in each: a ratio and an interval, plain numbers (no exponent, no n/a)
            for (String key : List.of("ratio_B_over_A", "ci95_low", "ci95_high", "half_width_pct", "A_median")) {
                assertTrue(word(s, key).matches("\\d+(\\.\\d+)?"), key + " in " + s);
            }
        }

        assertTrue(Files.size(jfr) > 0, "B's JVM wrote no recording");
        assertFalse(FlightRecording.named(FlightRecording.read(jfr), "FrontendConnected").isEmpty(),
                "B's recording holds no session");
    }
}
