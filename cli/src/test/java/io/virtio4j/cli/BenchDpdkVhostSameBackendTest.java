package io.virtio4j.cli;

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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code peers/bench-dpdk-vhost.sh --persistent --same-backend}: one back-end per "JVM pair" serves the A and the B
 * runs, B's between {@code --b-on} and {@code --b-off}. With stand-ins for the back-end and the driver
 * ({@link StandInBackEnds}: no DPDK, no JVM besides the statistics) the commands and the driver runs leave marks in one
 * file, in the order they ran, so that the order is checked, not inferred from timing.
 */
class BenchDpdkVhostSameBackendTest {
    @TempDir
    Path dir;

    private PeerRuns.Outcome bench(String on, String off, String... more) throws Exception {
        Path marks = dir.resolve("marks");
        List<String> argv = new ArrayList<>(List.of("bash", PeerRuns.script("bench-dpdk-vhost.sh").toString(),
                "--persistent", "--same-backend", "--reps", "4", "--restart-every", "2", "--sizes", "64",
                "--backend-warmup", "1", "--duration", "1", "--no-backend-result", "--v4j", PeerRuns.cli(),
                "--driver", StandInBackEnds.writeDriver(dir, marks).toString(),
                "--backend-a", StandInBackEnds.write(dir) + " {sock} " + dir.resolve("pids"),
                "--b-on", on, "--b-off", off));
        argv.addAll(Arrays.asList(more));
        return PeerRuns.run(Duration.ofMinutes(2), argv);
    }

    /**
     * Each JVM pair is one back-end, warmed as A and then as B; in its reps (AB, then BA) every B run and no A run lies
     * between an "on" and an "off" given that back-end's root PID and an existing {work}; the RUN lines say which side
     * and toggle each run was, with nothing stopped ({@code other_*=na}); a BACKEND line per back-end.
     */
    @Test
    void onlyTheBRunsLieBetweenOnAndOffInEachBackEndsOwnOrder() throws Exception {
        Path marks = dir.resolve("marks");
        PeerRuns.Outcome r = bench("test -d {work} && echo on {pid} >>" + marks, "echo off {pid} >>" + marks);
        assertEquals(0, r.exit(), r.output());

        List<String> roots = Arrays.stream(Files.readString(dir.resolve("pids")).trim().split("\n"))
                .map(l -> l.split(" ")[0]).toList();
        assertEquals(2, roots.size(), "one back-end per JVM pair:\n" + r.output());
        List<String> expected = new ArrayList<>();
        for (String pid : roots) {
            List<String> b = List.of("on " + pid, "drive", "off " + pid);
            expected.add("drive");          // warm-up as A
            expected.addAll(b);             // warm-up as B
            expected.add("drive");          // rep AB
            expected.addAll(b);
            expected.addAll(b);             // rep BA
            expected.add("drive");
        }
        assertEquals(expected, Files.readAllLines(marks), r.output());

        List<String> runs = r.lines("RUN ");
        assertEquals(List.of("1 1 AB A off", "1 1 AB B on", "2 1 BA B on", "2 1 BA A off", "3 2 AB A off",
                "3 2 AB B on", "4 2 BA B on", "4 2 BA A off"), runs.stream()
                .map(l -> String.join(" ", word(l, "rep"), word(l, "jvm"), word(l, "order"), word(l, "backend"),
                        word(l, "toggle")))
                .toList(), r.output());
        for (String run : runs) {
            assertEquals("na", word(run, "other_cpu"), run);
            assertEquals("na", word(run, "other_state"), run);
            assertEquals("0", word(run, "scrapes"), "no --b-scrape-every: " + run);
        }
        assertEquals(List.of("1 A", "2 A"), r.output().lines().filter(l -> l.startsWith("BACKEND "))
                .map(l -> word(l, "jvm") + " " + word(l, "backend")).toList(), r.output());
        assertTrue(r.output().contains("SUMMARY size=64 jvm=means figure=pps pairs=4 groups=2 "), r.output());
        StandInBackEnds.noneLeft(dir.resolve("pids"), 2, r.output());
    }

    /** A failing --b-on (the first, at the warm-up as B) ends the bench with exit 1, the command and its output. */
    @Test
    void aFailingOnCommandEndsTheBenchWithItsOutputAndLeavesNothing() throws Exception {
        PeerRuns.Outcome r = bench("echo no such recording >&2; exit 3", "true");
        assertEquals(1, r.exit(), r.output());
        assertTrue(r.output().matches("(?s).*no such recording\n.*ERROR: --b-on 'echo no such recording >&2; exit 3'"
                + " failed \\(status 3\\) at jvm=1 rep=warm-up size=64 \\(its output above\\).*"), r.output());
        assertFalse(r.output().contains("RUN "), r.output());
        StandInBackEnds.noneLeft(dir.resolve("pids"), 1, r.output());
    }

    /**
     * A --b-off that does not end is ended after PEERS_TOGGLE_TIMEOUT s (30 by default; 1 here), processes it started
     * included, and ends the bench with exit 1 and its command.
     */
    @Test
    void anOffCommandThatHangsIsEndedWithWhatItStarted() throws Exception {
        Path hung = dir.resolve("hung");
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(1), List.of("env", "PEERS_TOGGLE_TIMEOUT=1", "bash",
                PeerRuns.script("bench-dpdk-vhost.sh").toString(), "--persistent", "--same-backend", "--reps", "2",
                "--restart-every", "2", "--sizes", "64", "--backend-warmup", "1", "--no-backend-result",
                "--driver", StandInBackEnds.writeDriver(dir, dir.resolve("marks")).toString(),
                "--backend-a", StandInBackEnds.write(dir) + " {sock} " + dir.resolve("pids"),
                "--b-on", "true", "--b-off", "sleep 600 & echo $! >" + hung + "; wait"));
        assertEquals(1, r.exit(), r.output());
        assertTrue(r.output().contains("ERROR: --b-off 'sleep 600 & echo $! >" + hung
                + "; wait' did not end within 1s at jvm=1 rep=warm-up size=64"), r.output());
        StandInBackEnds.noneLeft(dir.resolve("pids"), 1, r.output());
        StandInBackEnds.allGone(List.of(Long.parseLong(Files.readString(hung).trim())), r.output());
    }

    /**
     * --windows with a stand-in back-end whose endpoint counts the stand-in driver's frames and marks each scrape:
     * {@code env} (NAME=VALUE words, may be empty) before the bench, the driver's frames counted in marks.
     */
    private PeerRuns.Outcome windows(List<String> env, String on, String... more) throws Exception {
        Path marks = dir.resolve("marks");
        List<String> argv = new ArrayList<>(List.of("env"));
        argv.addAll(env);
        argv.addAll(List.of("bash", PeerRuns.script("bench-dpdk-vhost.sh").toString(), "--persistent",
                "--same-backend", "--windows", "0.5", "--settle", "0.1", "--warmup", "0.2", "--reps", "4",
                "--restart-every", "2", "--sizes", "64", "--backend-warmup", "1", "--b-scrape-every", "0.1",
                "--no-backend-result", "--v4j", PeerRuns.cli(),
                "--driver", StandInBackEnds.writeDriver(dir, marks).toString(),
                "--backend-a", StandInBackEnds.write(dir) + " {sock} " + dir.resolve("pids") + " metrics {metrics} "
                        + marks,
                "--b-on", on, "--b-off", "echo off {pid} >>" + marks));
        argv.addAll(Arrays.asList(more));
        return PeerRuns.run(Duration.ofMinutes(2), argv);
    }

    /** The marks without the periodic scrapes, after checking that each of those lies between an "on" and an "off". */
    private List<String> marksWithoutPeriodicScrapes(String output) throws Exception {
        List<String> kept = new ArrayList<>();
        boolean on = false;
        for (String m : Files.readAllLines(dir.resolve("marks"))) {
            if (m.startsWith("scrape /metrics?")) {
                assertTrue(on, "a periodic scrape outside on/off:\n" + output);
                continue;
            }
            on = m.startsWith("on ") || (on && !m.startsWith("off "));
            kept.add(m);
        }
        return kept;
    }

    /**
     * Per JVM (after its warm-up runs as A and as B) one driver run holds that JVM's reps as windows, AB then BA; each
     * window lies between two scrapes of the back-end's counter, the B windows and only they between an "on" and an
     * "off" (each outside the two scrapes) and scraped periodically in between; the back-end is scraped before the
     * driver starts and after it ended. A RUN line per window: its rate is its frames over its seconds, which are at
     * least the window's; a DRIVER line per JVM whose counts agree; nothing left running.
     */
    @Test
    void windowsOfOneDriverRunAlternateWithOnAndOffAroundTheBWindowsOnly() throws Exception {
        Path marks = dir.resolve("marks");
        PeerRuns.Outcome r = windows(List.of(), "test -d {work} && echo on {pid} >>" + marks);
        assertEquals(0, r.exit(), r.output());

        List<String> roots = Arrays.stream(Files.readString(dir.resolve("pids")).trim().split("\n"))
                .map(l -> l.split(" ")[0]).toList();
        assertEquals(2, roots.size(), "one back-end per JVM:\n" + r.output());
        List<String> expected = new ArrayList<>();
        for (String pid : roots) {
            List<String> a = List.of("scrape /metrics", "scrape /metrics");
            List<String> b = List.of("on " + pid, "scrape /metrics", "scrape /metrics", "off " + pid);
            expected.addAll(List.of("drive", "on " + pid, "drive", "off " + pid));   // the warm-up runs as A and as B
            expected.addAll(List.of("scrape /metrics", "drive"));                   // before the slot's driver
            expected.addAll(a);                                                     // rep AB
            expected.addAll(b);
            expected.addAll(b);                                                     // rep BA
            expected.addAll(a);
            expected.add("scrape /metrics");                                        // after it
        }
        assertEquals(expected, marksWithoutPeriodicScrapes(r.output()), r.output());

        List<String> runs = r.lines("RUN ");
        assertEquals(List.of("1 1 AB A off", "1 1 AB B on", "2 1 BA B on", "2 1 BA A off", "3 2 AB A off",
                "3 2 AB B on", "4 2 BA B on", "4 2 BA A off"), runs.stream()
                .map(l -> String.join(" ", word(l, "rep"), word(l, "jvm"), word(l, "order"), word(l, "backend"),
                        word(l, "toggle")))
                .toList(), r.output());
        for (String run : runs) {
            long frames = field(run, "frames");
            double seconds = Double.parseDouble(word(run, "seconds"));
            assertTrue(frames > 0, run);
            assertTrue(seconds >= 0.5, "the window's sleep lies between its two scrapes: " + run);
            assertEquals((long) (frames / seconds), field(run, "pps"), run);
            PeerRuns.scrapedInBRunsOnly(run);
            assertEquals("na", word(run, "busy_before"), "not sampled between windows: " + run);
        }
        List<String> drivers = r.lines("DRIVER ");
        assertEquals(List.of("1", "2"), drivers.stream().map(l -> word(l, "jvm")).toList(), r.output());
        for (String d : drivers) {
            assertEquals("yes", word(d, "exact"), d);
            assertEquals(field(d, "tx_total"), field(d, "backend_rx"), d);
            long windowed = runs.stream().filter(l -> word(l, "jvm").equals(word(d, "jvm")))
                    .mapToLong(l -> field(l, "frames")).sum();
            assertTrue(windowed < field(d, "tx_total"), "the gaps and the warm-up count in the driver's total: " + d);
        }
        assertTrue(r.output().contains("SUMMARY size=64 jvm=means figure=pps pairs=4 groups=2 "), r.output());
        StandInBackEnds.noneLeft(dir.resolve("pids"), 2, r.output());
        driversGone(r.output());
    }

    /**
     * A back-end whose counter is past 2^31 (a few minutes at 15 Mpps) still gives every window its frames and the
     * driver run its exact count: the counters are summed and printed as doubles, exact to 2^53, not with awk's %d,
     * which mawk clamps at 2^31 - 1 (windows of 0 frames/s and an inexact driver run, as in a measurement with 20
     * reps per JVM).
     */
    @Test
    void aCounterPastTwoToTheThirtyFirstIsCountedExactly() throws Exception {
        PeerRuns.Outcome r = windows(List.of("STAND_IN_METRICS_OFFSET=3000000000"), "true");
        assertEquals(0, r.exit(), r.output());
        List<String> runs = r.lines("RUN ");
        assertEquals(8, runs.size(), r.output());
        for (String run : runs) {
            assertTrue(field(run, "frames") > 0 && field(run, "pps") > 0, run);
        }
        for (String d : r.lines("DRIVER ")) {
            assertEquals("yes", word(d, "exact"), d);
        }
        StandInBackEnds.noneLeft(dir.resolve("pids"), 2, r.output());
        driversGone(r.output());
    }

    /** A driver whose TX-packets disagree with the back-end's counter fails its JVM's DRIVER line and the bench. */
    @Test
    void aDriverCountThatDisagreesWithTheBackEndsFailsTheBench() throws Exception {
        PeerRuns.Outcome r = windows(List.of("STAND_IN_DRIVER_EXTRA=5"), "true");
        assertEquals(1, r.exit(), r.output());
        List<String> drivers = r.lines("DRIVER ");
        assertEquals(2, drivers.size(), r.output());
        for (String d : drivers) {
            assertEquals("no", word(d, "exact"), d);
            assertEquals(field(d, "backend_rx") + 5, field(d, "tx_total"), d);
        }
        assertTrue(r.output().contains("FAILURE: driver sent " + field(drivers.get(0), "tx_total")
                + " frames in JVM 1's slot of size 64, backend A counted " + field(drivers.get(0), "backend_rx")),
                r.output());
        assertTrue(r.output().contains("SUMMARY size=64 jvm=means "), "the summaries come first:\n" + r.output());
        StandInBackEnds.noneLeft(dir.resolve("pids"), 2, r.output());
        driversGone(r.output());
    }

    /** A --b-on failing inside the slot (no warm-up runs) ends the bench, its running driver and its back-end. */
    @Test
    void aFailureInsideTheSlotEndsItsDriverAndBackEnd() throws Exception {
        PeerRuns.Outcome r = windows(List.of(), "exit 3", "--backend-warmup", "0");
        assertEquals(1, r.exit(), r.output());
        assertTrue(r.output().contains("ERROR: --b-on 'exit 3' failed (status 3) at jvm=1 rep=1 size=64"),
                r.output());
        assertEquals(1, r.output().lines().filter(l -> l.startsWith("RUN ")).count(), "the A window came first:\n"
                + r.output());
        StandInBackEnds.noneLeft(dir.resolve("pids"), 1, r.output());
        driversGone(r.output());
    }

    private void driversGone(String output) throws Exception {
        List<Long> pids = Files.readAllLines(dir.resolve("marks.pids")).stream().map(Long::parseLong).toList();
        assertFalse(pids.isEmpty(), output);
        StandInBackEnds.allGone(pids, output);
    }

    /**
     * --same-backend's options that do not fit (a second back-end, on without off, scrapes without an endpoint) and the
     * B options without --same-backend are refused before anything starts, naming both sides.
     */
    @Test
    void optionsThatDoNotFitTheOneBackEndAreRefusedByName() throws Exception {
        String script = PeerRuns.script("bench-dpdk-vhost.sh").toString();
        List<List<String>> cases = List.of(
                List.of("--persistent", "--same-backend", "--backend-b", "x {sock}"),
                List.of("--same-backend", "--b-on", "true", "--b-off", "true"),
                List.of("--persistent", "--same-backend", "--b-on", "true"),
                List.of("--persistent", "--same-backend", "--b-off", "true"),
                List.of("--persistent", "--same-backend", "--backend-a", "x {sock}", "--b-scrape-every", "1"),
                List.of("--persistent", "--same-backend", "--backend-a", "x {sock} {metrics}", "--b-scrape-every", "0"),
                List.of("--persistent", "--b-on", "true", "--b-off", "true"),
                List.of("--persistent", "--b-scrape-every", "1"),
                List.of("--persistent", "--windows", "1"),
                List.of("--persistent", "--same-backend", "--backend-a", "x {sock}", "--windows", "1"),
                List.of("--persistent", "--same-backend", "--backend-a", "x {sock} {metrics}", "--windows", "0"),
                List.of("--persistent", "--same-backend", "--backend-a", "x {sock} {metrics}", "--windows", "1",
                        "--duration", "3"),
                List.of("--persistent", "--same-backend", "--settle", "1"));
        List<String> messages = List.of(
                "--backend-b has no place with --same-backend (A and B runs both go to --backend-a's back-end, B between"
                        + " --b-on and --b-off): got 'x {sock}'",
                "--same-backend needs --persistent (one back-end kept running serves the A and the B runs)",
                "--b-on needs --b-off (what --b-on starts must end before the next A run): got --b-on 'true' alone",
                "--b-off needs --b-on: got --b-off 'true' alone",
                "--b-scrape-every needs {metrics} in --backend-a (the endpoint to scrape): got 'x {sock}'",
                "--b-scrape-every takes seconds from 0.001 to 3600, got '0'",
                "--b-on needs --same-backend (it changes the one back-end for its B runs)",
                "--b-scrape-every needs --same-backend (it changes the one back-end for its B runs)",
                "--windows needs --persistent --same-backend (its A and B windows are one back-end's, in one driver"
                        + " run): got --windows '1' without --same-backend",
                "--windows needs {metrics} in --backend-a (a window's rate is the delta of the back-end's own counter):"
                        + " got 'x {sock}'",
                "--windows takes a window's seconds above 0, got '0'",
                "--duration has no place with --windows (a window lasts --windows s, the one driver run the whole"
                        + " JVM): got '3'",
                "--settle needs --windows (the gap after --b-on/--b-off before a window's first scrape): got '1'");
        for (int i = 0; i < cases.size(); i++) {
            List<String> argv = new ArrayList<>(List.of("bash", script));
            argv.addAll(cases.get(i));
            PeerRuns.Outcome r = PeerRuns.run(Duration.ofSeconds(30), argv);
            assertEquals(1, r.exit(), cases.get(i) + ":\n" + r.output());
            assertTrue(r.output().contains("ERROR: " + messages.get(i)), cases.get(i) + ":\n" + r.output());
            assertFalse(r.output().contains("backend pid"), "started a back-end:\n" + r.output());
        }
    }
}
