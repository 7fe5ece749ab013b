package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code peers/bench-dpdk-vhost.sh --persistent} on its error paths leaves no back-end behind, neither running nor
 * stopped (SIGSTOP), and says what failed. The back-ends are stand-ins (a shell that creates the socket and keeps a
 * child in a session of its own, as testpmd-vhost.sh's testpmd is), so these runs start neither DPDK nor a JVM: the
 * failures come before any driver would send a frame.
 */
class BenchDpdkVhostFailuresTest {
    /**
     * The stand-in: records "ROOT CHILD" PIDs in $2, creates the socket $1 and waits for SIGTERM, on which it exits
     * without its child (what a wrapper killed after the grace period leaves). "die" as $3: it is SIGKILLed 0.3 s after
     * its start by a process outside its tree (the harness does not stop that one); "slow": its socket comes after 1.5 s.
     */
    private static final String FAKE = """
            #!/usr/bin/env bash
            setsid sleep 600 </dev/null >/dev/null 2>&1 &
            echo "$$ $!" >>"$2"
            [ "${3:-}" != die ] || (setsid bash -c "sleep 0.3; kill -KILL $$" </dev/null >/dev/null 2>&1 &)
            [ "${3:-}" != slow ] || sleep 1.5
            python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
            trap 'exit 0' TERM
            while :; do sleep 0.1; done
            """;

    @TempDir
    Path dir;

    private PeerRuns.Outcome bench(String a, String b, String... more) throws IOException, InterruptedException {
        Path fake = dir.resolve("fake-backend.sh");
        Files.writeString(fake, FAKE);
        Path pids = dir.resolve("pids");
        List<String> argv = new java.util.ArrayList<>(List.of("bash", PeerRuns.script("bench-dpdk-vhost.sh").toString(),
                "--persistent", "--reps", "4", "--restart-every", "2", "--sizes", "64",
                "--backend-a", "bash " + fake + " {sock} " + pids + " " + a,
                "--backend-b", "bash " + fake + " {sock} " + pids + " " + b));
        argv.addAll(Arrays.asList(more));
        return PeerRuns.run(Duration.ofMinutes(2), argv);
    }

    /** Every PID the stand-ins recorded (roots and their children in sessions of their own) is gone. */
    private void noBackEndLeft(String output) throws IOException, InterruptedException {
        List<Long> pids = Arrays.stream(Files.readString(dir.resolve("pids")).trim().split("\\s+"))
                .map(Long::parseLong).toList();
        assertEquals(4, pids.size(), "two stand-ins, each with its child, were started:\n" + output);
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        for (long pid : pids) {
            // a killed process may stay a zombie for a moment, until its (new) parent reaps it: that one runs no more
            while (running(pid)) {
                if (System.nanoTime() > deadline) {
                    fail("pid " + pid + " is still there, state " + state(pid) + ", after the bench exited:\n" + output);
                }
                Thread.sleep(50);
            }
        }
    }

    private static String state(long pid) throws IOException {
        Path stat = Path.of("/proc", Long.toString(pid), "stat");
        try {
            String s = Files.readString(stat);
            return s.substring(s.lastIndexOf(") ") + 2).split(" ")[0];
        } catch (java.nio.file.NoSuchFileException e) {
            return "gone";
        }
    }

    private static boolean running(long pid) throws IOException {
        String s = state(pid);
        return !s.equals("gone") && !s.equals("Z") && !s.equals("X");
    }

    /**
     * Options that would give an unbalanced order (odd K: one order a rep more in every JVM pair), a partial JVM pair,
     * or nothing to run are refused before anything starts, naming the option and the value.
     */
    @Test
    void optionsForAnUnbalancedOrPartialRunAreRefusedByName() throws Exception {
        String script = PeerRuns.script("bench-dpdk-vhost.sh").toString();
        List<List<String>> cases = List.of(
                List.of("--persistent", "--reps", "40", "--restart-every", "5"),
                List.of("--persistent", "--reps", "6", "--restart-every", "4"),
                List.of("--persistent", "--reps", "3", "--restart-every", "0"),
                List.of("--sizes", " "),
                List.of("--sizes", "64 abc"),
                List.of("--duration", "0"),
                List.of("--warmup", "-1"));
        List<String> messages = List.of(
                "--restart-every must be even (as many AB as BA reps in each JVM pair), got 5",
                "--reps 6 is not a multiple of --restart-every 4 (whole JVM pairs only)",
                "--persistent --restart-every 0: --reps must be even (as many AB as BA), got 3",
                "--sizes takes frame sizes, got ' '",
                "--sizes: 'abc' is not a frame size of 42 bytes or more (in '64 abc')",
                "--duration takes a number of seconds above 0, got '0'",
                "--warmup takes a number of seconds, got '-1'");
        for (int i = 0; i < cases.size(); i++) {
            List<String> argv = new java.util.ArrayList<>(List.of("bash", script));
            argv.addAll(cases.get(i));
            PeerRuns.Outcome r = PeerRuns.run(Duration.ofSeconds(30), argv);
            assertEquals(1, r.exit(), cases.get(i) + ":\n" + r.output());
            assertTrue(r.output().contains("ERROR: " + messages.get(i)), cases.get(i) + ":\n" + r.output());
            assertFalse(r.output().contains("backend pid"), "started a back-end:\n" + r.output());
        }
    }

    /** The driver fails at its first start (the warm-up into A, B stopped meanwhile): both stand-ins and children end. */
    @Test
    void aFailingDriverLeavesNoBackEndRunningOrStopped() throws Exception {
        PeerRuns.Outcome r = bench("", "", "--driver-args", "--no-such-option");
        assertEquals(1, r.exit(), r.output());
        assertTrue(r.output().contains("ERROR: driver into backend A at jvm=1 rep=warm-up size=64 failed (status 2"),
                r.output());
        noBackEndLeft(r.output());
    }

    /**
     * A dies (SIGKILL from outside) while it is stopped, before its warm-up: resuming it says so by name and place
     * instead of a shell error, and its child in a session of its own, seen while A lived, is killed too.
     */
    @Test
    void aBackEndThatDiedIsNamedAndItsChildrenDoNotOutliveTheBench() throws Exception {
        PeerRuns.Outcome r = bench("die", "slow");
        assertEquals(1, r.exit(), r.output());
        assertTrue(r.output().matches("(?s).*ERROR: backend A \\(pid \\d+\\) is gone at jvm=1 rep=warm-up size=64.*"),
                r.output());
        assertFalse(r.output().contains("failed (status"), "a shell error instead of the message:\n" + r.output());
        noBackEndLeft(r.output());
    }
}
