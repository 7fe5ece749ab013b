package io.virtio4j.cli;

import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

/** The command line run as a user runs it, for tests of what it answers. */
final class CliRun {
    private CliRun() {
    }

    /** Runs {@code args}; returns the exit code (as a string) and everything written to stderr. Stdout is dropped. */
    static String[] execute(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setErr(new PrintWriter(err, true));
        cl.setOut(new PrintWriter(new StringWriter(), true));
        int code = cl.execute(args);
        return new String[] {Integer.toString(code), err.toString()};
    }
}
