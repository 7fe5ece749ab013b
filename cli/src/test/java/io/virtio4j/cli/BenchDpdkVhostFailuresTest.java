package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code peers/bench-dpdk-vhost.sh --persistent} on its error paths leaves no back-end behind, neither running nor
 * stopped (SIGSTOP), and says what failed. The back-ends are stand-ins ({@link StandInBackEnds}), so these runs start
 * neither DPDK nor a JVM: the failures come before any driver would send a frame.
 */
class BenchDpdkVhostFailuresTest {
    @TempDir
    Path dir;

    private PeerRuns.Outcome bench(String a, String b, String... more) throws IOException, InterruptedException {
        String fake = StandInBackEnds.write(dir) + " {sock} " + dir.resolve("pids") + " ";
        List<String> argv = new java.util.ArrayList<>(List.of("bash", PeerRuns.script("bench-dpdk-vhost.sh").toString(),
                "--persistent", "--reps", "4", "--restart-every", "2", "--sizes", "64",
                "--backend-a", fake + a, "--backend-b", fake + b));
        argv.addAll(Arrays.asList(more));
        return PeerRuns.run(Duration.ofMinutes(2), argv);
    }

    /** Every PID the two stand-ins recorded (roots and their children in sessions of their own) is gone. */
    private void noBackEndLeft(String output) throws IOException, InterruptedException {
        StandInBackEnds.noneLeft(dir.resolve("pids"), 2, output);
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
