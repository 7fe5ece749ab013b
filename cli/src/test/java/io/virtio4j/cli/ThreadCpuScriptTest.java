package io.virtio4j.cli;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code peers/thread-cpu.sh}, the per-thread CPU accounting behind the cost figures of a back-end's flight recording
 * and metrics endpoint: run on this JVM while one thread of it, named, spins through the whole window, and on a
 * process that sleeps through it.
 */
class ThreadCpuScriptTest {

    @Test
    void aThreadSpinningThroughTheWindowIsCountedByItsNameAndTheOthersApart() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        Thread spinner = new Thread(() -> {
            long spins = 0;
            while (!stop.get()) {
                spins++;
            }
            if (spins == 42) {
                System.out.print(""); // keeps the loop's count alive
            }
        }, "tcpu-spinner");
        spinner.start();
        PeerRuns.Outcome r;
        try {
            r = PeerRuns.run(Duration.ofSeconds(60), List.of(PeerRuns.script("thread-cpu.sh").toString(),
                    "--pid", Long.toString(ProcessHandle.current().pid()), "--seconds", "1.5"));
        } finally {
            stop.set(true);
            spinner.join();
        }
        assertEquals(0, r.exit(), r.output());
        String window = r.line("WINDOW ");
        assertTrue(window.startsWith("WINDOW pid=" + ProcessHandle.current().pid() + " "), window);
        String spun = r.lines("THREAD ").stream().filter(l -> l.contains(" name=tcpu-spinner ")).findFirst()
                .orElseThrow(() -> new AssertionError("the spinning thread is missing:\n" + r.output()));
        // it ran through the whole window: at least one 10 ms tick, however busy the machine
        assertTrue(Double.parseDouble(PeerRuns.word(spun, "cpu_s")) > 0, spun);
        // the window's total is every thread's, the spinner's and the others'
        double total = Double.parseDouble(PeerRuns.word(window, "cpu_s"));
        double threads = r.lines("THREAD ").stream().mapToDouble(l -> Double.parseDouble(PeerRuns.word(l, "cpu_s"))).sum();
        assertEquals(total, threads, 0.01 * r.lines("THREAD ").size() + 0.005, r.output());
        String busiest = r.lines("THREAD ").get(0);
        double others = Double.parseDouble(PeerRuns.word(r.line("OTHERS "), "cpu_s"));
        assertEquals(total - Double.parseDouble(PeerRuns.word(busiest, "cpu_s")), others, 0.015, r.output());
    }

    @Test
    void aSleepingProcessTakesNothingAndAMissingOneIsAnError() throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            PeerRuns.Outcome r = PeerRuns.run(Duration.ofSeconds(60), List.of(PeerRuns.script("thread-cpu.sh").toString(),
                    "--pid", Long.toString(sleeper.pid()), "--seconds", "1"));
            assertEquals(0, r.exit(), r.output());
            assertEquals("0.00", PeerRuns.word(r.line("WINDOW "), "cpu_s"), r.output());
            assertEquals("0.00", PeerRuns.word(r.line("OTHERS "), "cpu_s"), r.output());
            assertTrue(r.lines("THREAD ").isEmpty(), r.output());
        } finally {
            sleeper.destroy();
            sleeper.waitFor();
        }
        PeerRuns.Outcome gone = PeerRuns.run(Duration.ofSeconds(60), List.of(PeerRuns.script("thread-cpu.sh").toString(),
                "--pid", Long.toString(sleeper.pid()), "--seconds", "1"));
        assertEquals(1, gone.exit(), gone.output());
        assertTrue(gone.output().contains("no process " + sleeper.pid()), gone.output());
    }
}
