package io.virtio4j.cli;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Runs the peers/ scripts for the real-peer tests, with this build's command line as the back-end or front-end. */
final class PeerRuns {
    private PeerRuns() {
    }

    /** What a script printed (stdout and stderr together) and how it exited. */
    record Outcome(int exit, String output) {
        /** The last line that starts with {@code prefix} (a script's final word on it); fails the test when none does. */
        String line(String prefix) {
            return output.lines().filter(l -> l.startsWith(prefix)).reduce((a, b) -> b)
                    .orElseThrow(() -> new AssertionError("no " + prefix + " line in\n" + output));
        }

        /** Every line that starts with {@code prefix}, in order (e.g. "RUN ": one per run or window). */
        java.util.List<String> lines(String prefix) {
            return output.lines().filter(l -> l.startsWith(prefix)).toList();
        }
    }

    /** The repository's root (the tests run in the cli module's directory). */
    static Path root() {
        return Path.of("").toAbsolutePath().getParent();
    }

    /** The path of a script in peers/, checked to be there. */
    static Path script(String name) {
        Path p = root().resolve("peers").resolve(name);
        assertTrue(Files.isExecutable(p), "missing " + p);
        return p;
    }

    /** {@code virtio4j} as a command line: this JVM, this class path. */
    static String cli() {
        String java = ProcessHandle.current().info().command().orElseThrow();
        return java + " --enable-native-access=ALL-UNNAMED -cp " + System.getProperty("java.class.path") + " "
                + Main.class.getName();
    }

    /** The number after {@code key=} in a {@code RESULT key=value ...} line. */
    static long field(String line, String key) {
        return Long.parseLong(word(line, key));
    }

    /**
     * bench-dpdk-vhost.sh --same-backend: a B run (or window) was scraped at least once during its window by
     * --b-scrape-every, an A run never.
     */
    static void scrapedInBRunsOnly(String run) {
        if (word(run, "backend").equals("B")) {
            assertTrue(field(run, "scrapes") >= 1, run);
        } else {
            org.junit.jupiter.api.Assertions.assertEquals(0, field(run, "scrapes"), run);
        }
    }

    /** The value after {@code key=} in a line of {@code key=value} words. */
    static String word(String line, String key) {
        for (String kv : line.split(" ")) {
            if (kv.startsWith(key + "=")) {
                return kv.substring(key.length() + 1);
            }
        }
        throw new AssertionError("no " + key + " in " + line);
    }

    /**
     * Migrates a working guest whose {@code device} (blk or net) {@code backendCmd} serves with
     * {@code peers/qemu-migrate.sh}, capped at 32 MiB/s (QEMU's default) so that the move lasts a few seconds of
     * traffic. Without {@code dirtyLog} the source back-end runs with the test-only {@code --debug-no-dirty-log}: the
     * negative control, which must leave stale data on the destination.
     */
    static Outcome migrate(String device, String backendCmd, boolean dirtyLog, boolean packed)
            throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(List.of("bash", script("qemu-migrate.sh").toString(), "--device", device,
                "--backend-cmd", backendCmd, "--bandwidth", "32", "--timeout", "120"));
        if (packed) {
            argv.add("--packed");
        }
        if (!dirtyLog) {
            argv.addAll(List.of("--src-backend-cmd", backendCmd + " --debug-no-dirty-log"));
        }
        return run(Duration.ofMinutes(4), argv);
    }

    /**
     * Runs {@code argv} in the repository's root, stdin from /dev/null, output to a temporary file; fails the test when
     * it does not end within {@code limit} or when the peers are not installed.
     */
    static Outcome run(Duration limit, List<String> argv) throws IOException, InterruptedException {
        Path log = Files.createTempFile("virtio4j-peers", ".log");
        try {
            Process p = new ProcessBuilder(argv)
                    .directory(root().toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                fail(argv.get(1) + " did not finish within " + limit + "; log:\n" + Files.readString(log));
            }
            String out = Files.readString(log);
            System.out.println(out);
            if (out.contains(": command not found") || out.contains("run peers/install.sh")) {
                fail("the real peers are not installed: run peers/install.sh as root (./virtio4j test does)\n" + out);
            }
            return new Outcome(p.exitValue(), out);
        } finally {
            Files.deleteIfExists(log);
        }
    }
}
