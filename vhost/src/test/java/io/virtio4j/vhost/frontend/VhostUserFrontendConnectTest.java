package io.virtio4j.vhost.frontend;

import io.virtio4j.os.Errno;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.testkit.NoFdLeaks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Connecting with patience: what is waited out (no socket yet) and what is not. */
@ExtendWith(NoFdLeaks.class)
class VhostUserFrontendConnectTest {
    private static final int ENOTDIR = 20; // Linux x86-64

    @TempDir
    Path dir;

    @Test
    void aListeningBackEndIsConnectedAtOnce() throws Exception {
        Path path = dir.resolve("backend.sock");
        try (UnixServerSocket server = UnixServerSocket.listen(path, 1);
             VhostUserFrontend frontend = VhostUserFrontend.connect(path, Duration.ofSeconds(20));
             UnixSocket accepted = server.accept()) {
            assertNotNull(accepted);
        }
    }

    @Test
    void noSocketAfterThePatienceRanOutIsTheLastFailure() {
        LinuxException e = assertThrows(LinuxException.class,
                () -> VhostUserFrontend.connect(dir.resolve("absent.sock"), Duration.ofMillis(20)));
        assertEquals(Errno.ENOENT, e.errno());
    }

    @Test
    void aFailureThatWaitingCannotCureIsNotWaitedOut() throws Exception {
        Path file = Files.createFile(dir.resolve("plain-file"));
        // A path through a regular file: ENOTDIR, which no back-end starting up can cure (returns at once; were it
        // waited out like ENOENT, the test would hang until Surefire's time-out)
        LinuxException e = assertThrows(LinuxException.class,
                () -> VhostUserFrontend.connect(file.resolve("backend.sock"), Duration.ofDays(1)));
        assertEquals(ENOTDIR, e.errno());
    }
}
