package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The 12-byte message header: {@code u32 request; u32 flags; u32 size} (payload bytes that follow). Read and
 * written as is; whether a header is acceptable is the receiver's framing check.
 */
public record Header(int request, int flags, long size) {
    public static final int SIZE = 12;

    public Header {
        Payloads.checkU32("size", size);
    }

    /** The header in the first 12 bytes of {@code buf}. */
    public static Header read(MemorySegment buf) {
        return new Header(buf.get(ValueLayout.JAVA_INT_UNALIGNED, 0), buf.get(ValueLayout.JAVA_INT_UNALIGNED, 4),
                Payloads.u32(buf, 8));
    }

    /** Writes the header into the first 12 bytes of {@code buf}. */
    public void writeTo(MemorySegment buf) {
        buf.set(ValueLayout.JAVA_INT_UNALIGNED, 0, request);
        buf.set(ValueLayout.JAVA_INT_UNALIGNED, 4, flags);
        buf.set(ValueLayout.JAVA_INT_UNALIGNED, 8, (int) size);
    }
}
