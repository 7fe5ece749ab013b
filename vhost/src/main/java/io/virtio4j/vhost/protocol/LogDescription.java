package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;

/**
 * The payload of SET_LOG_BASE (with PROTOCOL_F_LOG_SHMFD): {@code u64 mmap_size; u64 mmap_offset;}, the dirty log's
 * size in bytes and where it starts in the fd that comes with the message. Both ends use this record; both fields
 * are unsigned (a value with the top bit set reads negative and is refused by the back-end as past any file).
 */
public record LogDescription(long mmapSize, long mmapOffset) {
    public static final int SIZE = 16;

    /** @throws VhostUserProtocolException naming {@code size} when the payload is not exactly {@link #SIZE} bytes */
    public static LogDescription decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        Payloads.requireSize(request, payload, SIZE);
        return new LogDescription(Payloads.u64(payload, 0), Payloads.u64(payload, 8));
    }

    public byte[] encode() {
        return Payloads.buffer(SIZE).putLong(mmapSize).putLong(mmapOffset).array();
    }
}
