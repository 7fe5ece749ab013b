package io.virtio4j.os.netlab;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs iproute2 and friends for tests and experiments that build network namespaces; unique, short interface and
 * namespace names. The one command runner of the test trees and the measuring tools.
 */
public final class Commands {
    private static final AtomicInteger NEXT = new AtomicInteger();

    private Commands() {
    }

    /** A name no other test run on this machine uses now: v4j, this JVM's pid, a letter and a counter; at most 15 bytes. */
    public static String uniqueName(char kind) {
        return "v4j" + (ProcessHandle.current().pid() % 100_000) + kind + NEXT.incrementAndGet();
    }

    /** Runs {@code argv}, waits (bounded) and returns its standard output; fails with its output when it fails. */
    public static String run(String... argv) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            // Every stream closed here rather than by the JDK's reaper thread once the child exits: the pipes go
            // when this returns, not at some later moment.
            try (var in = p.getInputStream(); var out = p.getOutputStream(); var err = p.getErrorStream()) {
                out.close();
                if (!p.waitFor(30, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new IllegalStateException(String.join(" ", argv) + ": no exit within 30 s");
                }
                String output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                if (p.exitValue() != 0) {
                    throw new IllegalStateException(String.join(" ", argv) + " exited " + p.exitValue() + ": " + output);
                }
                return output;
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + List.of(argv), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + List.of(argv), e);
        }
    }

    /** Like {@link #run} but never fails: for clean-up. */
    public static void quietly(String... argv) {
        try {
            run(argv);
        } catch (RuntimeException ignored) {
            // already gone
        }
    }
}
