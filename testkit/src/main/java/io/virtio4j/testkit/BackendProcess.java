package io.virtio4j.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A back-end started as a user starts it ({@code virtio4j serve ...} or a peer's script), its output (stdout and
 * stderr together) going to {@code log}. {@link #stop} ends it as a user does (SIGTERM) and returns what it printed;
 * closing stops it if it still runs, so a test that fails half-way leaves no process behind.
 */
public record BackendProcess(Process process, Path log) implements AutoCloseable {
    /** How long a back-end has to end after SIGTERM before it is killed and the test fails. */
    private static final long STOP_SECONDS = 30;

    /** Starts {@code argv} with its output in {@code log}. */
    public static BackendProcess start(List<String> argv, Path log) throws IOException {
        return new BackendProcess(new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(log.toFile())
                .start(), log);
    }

    /** What it printed so far. */
    public String output() throws IOException {
        return Files.readString(log);
    }

    /**
     * SIGTERM, wait, and what it printed.
     *
     * @throws AssertionError when it did not end within 30 s (it is killed first)
     */
    public String stop() throws InterruptedException, IOException {
        process.destroy();
        if (!process.waitFor(STOP_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError("the back-end did not stop within " + STOP_SECONDS + " s of SIGTERM:\n"
                    + output());
        }
        return output();
    }

    @Override
    public void close() throws InterruptedException, IOException {
        if (process.isAlive()) {
            stop();
        }
    }
}
