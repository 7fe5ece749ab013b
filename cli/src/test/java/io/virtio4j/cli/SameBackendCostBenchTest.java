package io.virtio4j.cli;

import io.virtio4j.testkit.FlightRecording;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static io.virtio4j.cli.PeerRuns.field;
import static io.virtio4j.cli.PeerRuns.word;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The short form of the cost measurement in one back-end JVM ({@code peers/bench-dpdk-vhost.sh --persistent
 * --same-backend}): DPDK virtio-user into one {@code serve net --metrics}, whose B runs lie between a {@code jcmd
 * JFR.start} with virtio4j.jfc and a {@code jcmd JFR.stop} that writes the recording, its endpoint scraped every second
 * meanwhile; one JVM of two reps (AB, BA) with 1-second windows. What it checks does not depend on speed: the order and
 * the toggle of each run; the counters scraped before and after each run equal what the driver sent in it, and the
 * back-end's RESULT at its stop everything the drivers sent it, warm-up included; the B runs were scraped and the A runs
 * not; the recording {@code --b-off} wrote last holds virtio4j's events of exactly one front-end session: the last B
 * run's, none of an A run's. The same with {@code --windows 1}: the two reps as windows of one driver run.
 */
class SameBackendCostBenchTest {
    @TempDir
    Path dir;

    /**
     * The bench of one JVM of two reps into {@code serve net --metrics}, B between a JFR.start with virtio4j.jfc and a
     * JFR.stop that writes {@code jfr}, scraped every second meanwhile, with {@code more} options.
     */
    private PeerRuns.Outcome bench(Path jfr, String... more) throws Exception {
        String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
        String settings = PeerRuns.root().resolve("share/virtio4j/jfr/virtio4j.jfc").toString();
        String cli = PeerRuns.cli();
        List<String> argv = new ArrayList<>(List.of("bash", PeerRuns.script("bench-dpdk-vhost.sh").toString(),
                "--persistent", "--same-backend", "--reps", "2", "--restart-every", "2", "--backend-warmup", "1",
                "--sizes", "64", "--v4j", cli,
                "--backend-a", cli + " serve net --socket {sock} --mode rxonly --metrics unix:{metrics}",
                // jcmd says when a recording cannot start or stop, but exits 0 all the same: its line is the check
                "--b-on", jcmd + " {pid} JFR.start name=cost settings=" + settings + " | grep 'Started recording'",
                "--b-off", jcmd + " {pid} JFR.stop name=cost filename=" + jfr + " | grep 'Stopped recording'",
                "--b-scrape-every", "1"));
        argv.addAll(Arrays.asList(more));
        return PeerRuns.run(Duration.ofMinutes(3), argv);
    }

    /** Each RUN line's rep, order, back-end and toggle, the sequence both modes must keep. */
    private static List<String> repOrderBackendToggle(List<String> runs) {
        return runs.stream()
                .map(l -> String.join(" ", word(l, "rep"), word(l, "order"), word(l, "backend"), word(l, "toggle")))
                .toList();
    }

    @Test
    void oneBackEndServesARunsAndBRunsWithARecordingAroundEachBRun() throws Exception {
        Path jfr = dir.resolve("b.jfr");
        PeerRuns.Outcome r = bench(jfr, "--duration", "1");
        assertEquals(0, r.exit(), "bench-dpdk-vhost --persistent --same-backend failed:\n" + r.output());

        List<String> runs = r.lines("RUN ");
        assertEquals(List.of("1 AB A off", "1 AB B on", "2 BA B on", "2 BA A off"), repOrderBackendToggle(runs),
                r.output());
        for (String run : runs) {
            long tx = field(run, "tx_total");
            assertTrue(tx > 0, run);
            assertEquals(tx, field(run, "backend_rx"), run);
            assertEquals("yes", word(run, "exact"), run);
            assertEquals("1", word(run, "jvm"), run);
            // the driver runs ~3 s (its start, 1 s warm-up, 1 s window, 1 s drain): a scrape a second finds it running
            PeerRuns.scrapedInBRunsOnly(run);
            assertEquals("na", word(run, "other_state"), "nothing is stopped: " + run);
        }

        String backend = r.line("BACKEND ");
        assertEquals("1 A yes", word(backend, "jvm") + " " + word(backend, "backend") + " " + word(backend, "exact"),
                backend);
        long measured = runs.stream().mapToLong(l -> field(l, "tx_total")).sum();
        assertTrue(field(backend, "rx_total") > measured, "the warm-ups as A and as B count too: " + backend);
        assertEquals(field(backend, "driver_tx_total"), field(backend, "rx_total"), backend);
        for (String jvm : List.of("1", "all")) {
            assertTrue(word(r.line("SUMMARY size=64 jvm=" + jvm + " "), "ratio_B_over_A").matches("\\d+(\\.\\d+)?"),
                    r.output());
        }

        assertTrue(Files.size(jfr) > 0, "--b-off wrote no recording");
        assertEquals(1, FlightRecording.named(FlightRecording.read(jfr), "FrontendConnected").size(),
                "the last recording spans the last B run's session alone");
    }

    /**
     * {@code --windows 1}: the JVM's two reps as four 1-second windows of one DPDK driver run, AB then BA, each rated
     * by the back-end's own counter; the driver's count equals the counter's delta over its life and the back-end's
     * RESULT everything the drivers sent it; the B windows were scraped and the A windows not; and the recording the
     * last --b-off wrote, of the last B window, holds no front-end session's start or end: that window lay inside the
     * one connection (~30 s here).
     */
    @Test
    void oneDriverRunHoldsTheWindowsWithARecordingAroundEachBWindow() throws Exception {
        Path jfr = dir.resolve("w.jfr");
        PeerRuns.Outcome r = bench(jfr, "--windows", "1");
        assertEquals(0, r.exit(), "bench-dpdk-vhost --windows failed:\n" + r.output());

        List<String> runs = r.lines("RUN ");
        assertEquals(List.of("1 AB A off", "1 AB B on", "2 BA B on", "2 BA A off"), repOrderBackendToggle(runs),
                r.output());
        for (String run : runs) {
            long frames = field(run, "frames");
            double seconds = Double.parseDouble(word(run, "seconds"));
            assertTrue(frames > 0, run);
            assertTrue(seconds >= 1, "the window's sleep lies between its two scrapes: " + run);
            assertEquals((long) (frames / seconds), field(run, "pps"), run);
            // a second's window, scraped every second from its start: the first scrape comes at once
            PeerRuns.scrapedInBRunsOnly(run);
        }

        String driver = r.line("DRIVER ");
        assertEquals("1 yes", word(driver, "jvm") + " " + word(driver, "exact"), driver);
        assertEquals(field(driver, "tx_total"), field(driver, "backend_rx"), driver);
        assertTrue(runs.stream().mapToLong(l -> field(l, "frames")).sum() < field(driver, "tx_total"),
                "the warm-up and the gaps count in the driver's total: " + driver);
        String backend = r.line("BACKEND ");
        assertEquals("yes", word(backend, "exact"), backend);
        assertEquals(field(backend, "driver_tx_total"), field(backend, "rx_total"), backend);
        assertTrue(field(backend, "rx_total") > field(driver, "tx_total"), "the warm-up runs count too: " + backend);
        for (String jvm : List.of("1", "all")) {
            assertTrue(word(r.line("SUMMARY size=64 jvm=" + jvm + " "), "ratio_B_over_A").matches("\\d+(\\.\\d+)?"),
                    r.output());
        }

        assertTrue(Files.size(jfr) > 0, "--b-off wrote no recording");
        for (String session : List.of("FrontendConnected", "FrontendDisconnected")) {
            assertEquals(0, FlightRecording.named(FlightRecording.read(jfr), session).size(),
                    "the last B window lies inside the slot's one connection: " + session);
        }
    }
}
