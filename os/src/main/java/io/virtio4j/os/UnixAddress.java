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

/** struct sockaddr_un: the address of an AF_UNIX socket (a filesystem path; read back, also an abstract name). */
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

    /**
     * The filesystem path in {@code address} as getsockname filled it ({@code length} bytes of it), or null when it
     * has none: unnamed (only the family), or abstract (sun_path starts with a NUL byte).
     */
    static Path pathOf(MemorySegment address, int length) {
        int bytes = length - (int) PATH;
        if (bytes <= 0 || address.get(JAVA_BYTE, PATH) == 0) {
            return null;
        }
        byte[] raw = new byte[bytes];
        MemorySegment.copy(address, JAVA_BYTE, PATH, raw, 0, bytes);
        int end = 0;
        while (end < bytes && raw[end] != 0) { // the kernel may count the terminating NUL in the length
            end++;
        }
        return Path.of(new String(raw, 0, end, StandardCharsets.UTF_8));
    }

    /** {@code address} as text for messages: its path, an abstract name as {@code @name}, or {@code (unnamed)}. */
    static String describe(MemorySegment address, int length) {
        Path path = pathOf(address, length);
        if (path != null) {
            return path.toString();
        }
        int bytes = length - (int) PATH;
        if (bytes <= 0) {
            return "(unnamed)";
        }
        byte[] raw = new byte[bytes - 1];
        MemorySegment.copy(address, JAVA_BYTE, PATH + 1, raw, 0, raw.length);
        return "@" + new String(raw, StandardCharsets.ISO_8859_1).replace('\0', '@');
    }
}
