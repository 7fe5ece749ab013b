package io.virtio4j.os;

import io.virtio4j.os.netlab.Commands;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A test class's {@code main} run in a child JVM limited to C1: C2's escape analysis could remove an allocation the
 * code makes, so an allocation-free claim is measured where nothing hides one. The child prints its figures, separated
 * by spaces, on its last line.
 */
record C1Child(String output, String[] figures) {
    /** Runs {@code main}'s main method and checks its last line holds {@code figures} figures. */
    static C1Child run(Class<?> main, int figures) {
        String java = ProcessHandle.current().info().command().orElseThrow(() -> new IllegalStateException("no java command"));
        String out = Commands.run(java, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), main.getName()).strip();
        String[] f = out.substring(out.lastIndexOf('\n') + 1).split(" ");
        assertEquals(figures, f.length, out);
        return new C1Child(out, f);
    }

    /** Figure {@code i} of the last line, a number. */
    long figure(int i) {
        return Long.parseLong(figures[i]);
    }
}
