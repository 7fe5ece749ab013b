package io.virtio4j.cli;

import java.io.PrintStream;

/** A one-line progress indicator on stderr, shown only when stderr is a terminal. */
final class Progress {
    private final PrintStream err;
    private final boolean enabled;
    private int width;

    Progress(PrintStream err) {
        this.err = err;
        java.io.Console c = System.console();
        this.enabled = c != null && c.isTerminal() && System.getenv("CI") == null;
    }

    void show(String line) {
        if (!enabled) {
            return;
        }
        err.print("\r" + line + " ".repeat(Math.max(0, width - line.length())));
        err.flush();
        width = line.length();
    }

    void clear() {
        if (!enabled || width == 0) {
            return;
        }
        err.print("\r" + " ".repeat(width) + "\r");
        err.flush();
        width = 0;
    }
}
