package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** AF_UNIX sockets at real paths in a temporary directory. */
@ExtendWith(NoFdLeaks.class)
class UnixSocketPathTest {
    @TempDir
    Path dir;

    @Test
    void connectAcceptAndTalkBothWays() {
        Path path = dir.resolve("vhost.sock");
        try (UnixServerSocket server = UnixServerSocket.listen(path, 1);
             UnixSocket client = UnixSocket.connect(path); // the backlog holds it until accept
             UnixSocket accepted = server.accept();
             Arena arena = Arena.ofConfined()) {
            assertEquals(path, server.path());
            assertEquals(11L, roundTrip(client, accepted, arena, 11L));
            assertEquals(12L, roundTrip(accepted, client, arena, 12L));
        }
    }

    private static long roundTrip(UnixSocket from, UnixSocket to, Arena arena, long value) {
        MemorySegment out = arena.allocate(JAVA_LONG);
        out.set(JAVA_LONG, 0, value);
        from.sendmsg(out, 8);
        MemorySegment in = arena.allocate(JAVA_LONG);
        assertEquals(new UnixSocket.Received(8, 0), to.recvmsg(in, new FileDescriptor[0]));
        return in.get(JAVA_LONG, 0);
    }

    @Test
    void connectingToAMissingPathIsENOENT() {
        LinuxException e = assertThrows(LinuxException.class, () -> UnixSocket.connect(dir.resolve("missing.sock")));
        assertEquals("ENOENT", e.errnoName());
        assertTrue(e.call().startsWith("connect(") && e.call().endsWith("missing.sock)"), e.call());
    }

    @Test
    void connectingWhereNobodyListensIsECONNREFUSED() {
        Path path = dir.resolve("stale.sock");
        UnixServerSocket.listen(path, 1).close(); // leaves the socket file behind
        LinuxException e = assertThrows(LinuxException.class, () -> UnixSocket.connect(path));
        assertEquals("ECONNREFUSED", e.errnoName());
    }

    @Test
    void listeningWhereAFileExistsIsEADDRINUSE() {
        Path path = dir.resolve("taken.sock");
        UnixServerSocket first = UnixServerSocket.listen(path, 1);
        try {
            LinuxException e = assertThrows(LinuxException.class, () -> UnixServerSocket.listen(path, 1));
            assertEquals("EADDRINUSE", e.errnoName());
        } finally {
            first.close();
        }
    }

    @Test
    void pathsUpTo107BytesWorkAndLongerOnesAreRejected() {
        Path longest = pathOfBytes(107);
        try (UnixServerSocket server = UnixServerSocket.listen(longest, 1)) {
            UnixSocket.connect(longest).close(); // the backlog keeps the connection for accept
            server.accept().close();
        }
        Path tooLong = pathOfBytes(108);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> UnixServerSocket.listen(tooLong, 1));
        assertTrue(e.getMessage().contains("108 bytes, at most 107"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> UnixSocket.connect(tooLong));
    }

    /** A path in the temporary directory whose string form is exactly {@code bytes} bytes long. */
    private Path pathOfBytes(int bytes) {
        int nameLength = bytes - dir.toString().length() - 1;
        assertTrue(nameLength > 0, "temporary directory path too long for this test: " + dir);
        return dir.resolve("s".repeat(nameLength));
    }
}
