package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/** struct sockaddr_un for a filesystem path: the address of an AF_UNIX socket. */
final class UnixAddress {
    private UnixAddress() {
    }

    static final short AF_UNIX = 1;
    private static final int PATH_CAPACITY = 108;
    /** sun_path must hold the path and its terminating NUL. */
    static final int MAX_PATH_BYTES = PATH_CAPACITY - 1;

    private static final StructLayout SOCKADDR_UN = MemoryLayout.structLayout(
            JAVA_SHORT.withName("sun_family"), MemoryLayout.sequenceLayout(PATH_CAPACITY, JAVA_BYTE).withName("sun_path"));
    private static final long FAMILY = SOCKADDR_UN.byteOffset(groupElement("sun_family"));
    private static final long PATH = SOCKADDR_UN.byteOffset(groupElement("sun_path"));

    /** Size to pass as the address length: the whole 110-byte struct. */
    static long size() {
        return SOCKADDR_UN.byteSize();
    }

    /**
     * The address of {@code path}, zero-filled, so sun_path is NUL-terminated.
     *
     * @throws IllegalArgumentException when the path is empty or longer than 107 bytes (java.nio.file.Path
     *         already refuses NUL bytes)
     */
    static MemorySegment of(Path path, Arena arena) {
        byte[] bytes = path.toString().getBytes(StandardCharsets.UTF_8);
        if (bytes.length > MAX_PATH_BYTES) {
            throw new IllegalArgumentException("AF_UNIX socket path is " + bytes.length + " bytes, at most "
                    + MAX_PATH_BYTES + " fit in sockaddr_un (use a shorter directory or a relative path): " + path);
        }
        if (bytes.length == 0) { // the kernel would pick an abstract address instead ("autobind")
            throw new IllegalArgumentException("AF_UNIX socket path is empty");
        }
        MemorySegment address = arena.allocate(SOCKADDR_UN); // zeroed
        address.set(JAVA_SHORT, FAMILY, AF_UNIX);
        MemorySegment.copy(bytes, 0, address, JAVA_BYTE, PATH, bytes.length);
        return address;
    }
}
