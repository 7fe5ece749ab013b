package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Reading and writing payload fields: native byte order, C layout, no alignment assumed. Used by the records. */
final class Payloads {
    private Payloads() {
    }

    /** Refuses a payload that is not exactly {@code size} bytes. */
    static void requireSize(String request, MemorySegment payload, long size) throws VhostUserProtocolException {
        if (payload.byteSize() != size) {
            throw new VhostUserProtocolException(request, "size", payload.byteSize(), "payload must be " + size + " bytes");
        }
    }

    static long u64(MemorySegment payload, long offset) {
        return payload.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
    }

    /** A u16 field, unsigned. */
    static int u16(MemorySegment payload, long offset) {
        return Short.toUnsignedInt(payload.get(ValueLayout.JAVA_SHORT_UNALIGNED, offset));
    }

    /** A u32 field, unsigned. */
    static long u32(MemorySegment payload, long offset) {
        return Integer.toUnsignedLong(payload.get(ValueLayout.JAVA_INT_UNALIGNED, offset));
    }

    static ByteBuffer buffer(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.nativeOrder());
    }

    /** Refuses a value for a u32 field when building a payload (a programming error, not a peer's). */
    static long checkU32(String field, long value) {
        if (value < 0 || value > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException(field + " " + value + " does not fit a u32");
        }
        return value;
    }
}
