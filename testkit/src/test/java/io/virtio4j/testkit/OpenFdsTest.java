package io.virtio4j.testkit;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.AssertionFailedError;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OpenFdsTest {
    @TempDir
    Path dir;

    @Test
    void aDescriptorLeftOpenFailsTheCheckAndNamesWhatItPointsAt() throws IOException {
        Map<Integer, String> before = OpenFds.snapshot();
        Path file = Files.createFile(dir.resolve("leaked"));
        try (FileChannel leaked = FileChannel.open(file)) {
            AssertionFailedError e = assertThrows(AssertionFailedError.class,
                    () -> OpenFds.assertBackTo(before, 0, 50_000_000L));
            assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        }
        OpenFds.assertBackTo(before);
    }

    @Test
    void aLeakIsCaughtEvenWhenAnotherDescriptorClosedMeanwhile() throws IOException {
        FileChannel older = FileChannel.open(Files.createFile(dir.resolve("older")));
        Map<Integer, String> before = OpenFds.snapshot();
        older.close(); // the count goes down by one ...
        Path file = Files.createFile(dir.resolve("leaked"));
        try (FileChannel leaked = FileChannel.open(file)) { // ... and back up: same count, not the same descriptors
            AssertionFailedError e = assertThrows(AssertionFailedError.class,
                    () -> OpenFds.assertBackTo(before, 0, 50_000_000L));
            assertTrue(e.getMessage().contains(file.toString()) && e.getMessage().contains("older"), e.getMessage());
        }
    }

    @Test
    void theProcessLaunchersPipesAreTheRuntimesNotOurs() throws IOException, InterruptedException {
        Map<Integer, String> before = OpenFds.snapshot();
        Process cat = new ProcessBuilder("cat").start(); // stdin, stdout and stderr: three pipes held by this JVM
        try (var in = cat.getInputStream(); var out = cat.getOutputStream(); var err = cat.getErrorStream()) {
            OpenFds.assertBackTo(before, 0, 0);
            out.close();
            cat.waitFor();
        }
    }

    @Test
    void classifiesTargets() {
        assertTrue(OpenFds.ownedByRuntime("pipe:[15162]"));
        assertTrue(OpenFds.ownedByRuntime("/root/.m2/repository/org/junit/x.jar"));
        assertTrue(OpenFds.ownedByRuntime("/usr/lib/jvm/temurin-25-jdk-amd64/lib/modules"));
        assertFalse(OpenFds.ownedByRuntime("/memfd:guest (deleted)"));
        assertFalse(OpenFds.ownedByRuntime("anon_inode:[eventfd]"));
        assertFalse(OpenFds.ownedByRuntime("socket:[123]"));
        assertFalse(OpenFds.ownedByRuntime("/dev/net/tun"));
    }
}
