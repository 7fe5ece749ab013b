package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The GET_CONFIG and SET_CONFIG payload: {@code u32 offset; u32 size; u32 flags;} then {@code size} bytes of
 * configuration space ({@code size} = {@code data.length}, at most {@link #MAX_DATA}). In a GET_CONFIG request
 * the data only sizes the answer, which carries the same header and the bytes read.
 */
public record ConfigPayload(long offset, long flags, byte[] data) {
    public static final int HEADER_SIZE = 12;
    /** VHOST_USER_MAX_CONFIG_SIZE. */
    public static final int MAX_DATA = 256;
    public static final int MAX_SIZE = HEADER_SIZE + MAX_DATA;
    /** A write of a writable field by the driver. */
    public static final long FLAG_WRITABLE = 0;
    /** State restored during live migration: read-only fields may be written. */
    public static final long FLAG_MIGRATION = 1;

    public ConfigPayload {
        Payloads.checkU32("offset", offset);
        if (flags != FLAG_WRITABLE && flags != FLAG_MIGRATION) {
            throw new IllegalArgumentException("config flags are 0 or 1, not " + flags);
        }
        if (data.length > MAX_DATA) {
            throw new IllegalArgumentException("at most " + MAX_DATA + " bytes of config space, not " + data.length);
        }
        data = data.clone();
    }

    @Override
    public byte[] data() {
        return data.clone();
    }

    public static ConfigPayload decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        if (payload.byteSize() < HEADER_SIZE) {
            throw new VhostUserProtocolException(request, "size", payload.byteSize(), "shorter than the config header");
        }
        long offset = Payloads.u32(payload, 0);
        long size = Payloads.u32(payload, 4);
        long flags = Payloads.u32(payload, 8);
        if (size > MAX_DATA || payload.byteSize() != HEADER_SIZE + size) {
            throw new VhostUserProtocolException(request, "size", size, "must be <= " + MAX_DATA + " and match the payload ("
                    + (payload.byteSize() - HEADER_SIZE) + " bytes of data)");
        }
        if (flags != FLAG_WRITABLE && flags != FLAG_MIGRATION) {
            throw new VhostUserProtocolException(request, "flags", flags, "must be 0 (writable field) or 1 (migration)");
        }
        return new ConfigPayload(offset, flags, payload.asSlice(HEADER_SIZE, size).toArray(ValueLayout.JAVA_BYTE));
    }

    public byte[] encode() {
        return Payloads.buffer(HEADER_SIZE + data.length).putInt((int) offset).putInt(data.length).putInt((int) flags)
                .put(data).array();
    }
}
