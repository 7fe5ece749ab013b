package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;

/**
 * A u64 payload: virtio and protocol features, the virtio status, GET_QUEUE_NUM and GET_MAX_MEM_SLOTS answers,
 * and the REPLY_ACK status (0 = success).
 */
public record U64(long value) {
    public static final int SIZE = 8;

    public static U64 decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        Payloads.requireSize(request, payload, SIZE);
        return new U64(Payloads.u64(payload, 0));
    }

    public byte[] encode() {
        return Payloads.buffer(SIZE).putLong(value).array();
    }
}
