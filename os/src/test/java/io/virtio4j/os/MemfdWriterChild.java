package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Main class of the second JVM in {@link CrossProcessMappingTest}: connects to the socket at {@code args[0]},
 * receives a memfd and its size, maps it, writes {@code args[1]} at offset 0, copies the long at offset 8 to
 * offset 16 (proving it sees the parent's writes too), and answers with one byte.
 */
public final class MemfdWriterChild {
    private MemfdWriterChild() {
    }

    public static void main(String[] args) {
        Path socketPath = Path.of(args[0]);
        long value = Long.parseLong(args[1]);
        try (UnixSocket socket = UnixSocket.connect(socketPath); Arena arena = Arena.ofConfined()) {
            MemorySegment message = arena.allocate(JAVA_LONG);
            FileDescriptor[] fds = new FileDescriptor[1];
            UnixSocket.Received received = socket.recvmsg(message, fds);
            if (received.bytes() != 8 || received.fds() != 1) {
                throw new IllegalStateException("expected 8 bytes and 1 fd, got " + received);
            }
            try (FileDescriptor memfd = fds[0]) {
                MemorySegment shared = Mmap.mapShared(memfd, message.get(JAVA_LONG, 0), arena);
                shared.set(JAVA_LONG, 0, value);
                shared.set(JAVA_LONG, 16, shared.get(JAVA_LONG, 8));
            }
            socket.sendmsg(message, 1);
        }
    }
}
