package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/** A memfd shared between this JVM and a second one, handed over a Unix socket: the vhost-user situation. */
@ExtendWith(NoFdLeaks.class)
class CrossProcessMappingTest {
    private static final long WRITTEN_BY_CHILD = 0x0bad_cafe_f00d_0001L;
    private static final long WRITTEN_BY_PARENT = 0x7e57_0000_0000_0002L;

    @TempDir
    Path dir;

    @Test
    void aSecondJvmMapsAReceivedMemfdAndThisOneSeesItsWrite() throws IOException, InterruptedException {
        Path socketPath = dir.resolve("child.sock");
        Path log = dir.resolve("child.log");
        long size = Mmap.pageSize();
        try (UnixServerSocket server = UnixServerSocket.listen(socketPath, 1);
             FileDescriptor memfd = Memfd.create("cross-process", size);
             Arena arena = Arena.ofConfined()) {
            MemorySegment shared = Mmap.mapShared(memfd, size, arena);
            shared.set(JAVA_LONG, 8, WRITTEN_BY_PARENT);

            Process child = startChild(socketPath, log);
            try (UnixSocket socket = acceptFrom(server, child, log)) {
                MemorySegment message = arena.allocate(JAVA_LONG);
                message.set(JAVA_LONG, 0, size);
                socket.sendmsg(message, 8, memfd);
                UnixSocket.Received ack = socket.recvmsg(message, new FileDescriptor[0]);
                assertEquals(1, ack.bytes(), () -> "child answered nothing; its output:\n" + read(log));
            }
            assertEquals(0, child.waitFor(), () -> "child failed; its output:\n" + read(log));
            assertEquals(WRITTEN_BY_CHILD, shared.get(JAVA_LONG, 0));
            assertEquals(WRITTEN_BY_PARENT, shared.get(JAVA_LONG, 16));
        }
    }

    private static Process startChild(Path socketPath, Path log) throws IOException {
        String java = ProcessHandle.current().info().command().orElseThrow(() -> new IllegalStateException("no java command"));
        List<String> command = List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"),
                MemfdWriterChild.class.getName(), socketPath.toString(), Long.toString(WRITTEN_BY_CHILD));
        return new ProcessBuilder(command)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    /** Accepts the child's connection, failing instead of hanging when the child dies first. */
    private static UnixSocket acceptFrom(UnixServerSocket server, Process child, Path log) throws IOException, InterruptedException {
        Poll connection = new Poll(server.fileDescriptor(), Poll.POLLIN);
        while (connection.await(TimeUnit.MILLISECONDS.toNanos(100)) == 0) {
            if (!child.isAlive()) {
                fail("child exited with " + child.waitFor() + " before connecting; its output:\n" + read(log));
            }
        }
        return server.accept();
    }

    private static String read(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }
}
