package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;

/**
 * {@code u32 index; u32 num}: the payload of SET_VRING_NUM (queue size), SET/GET_VRING_BASE (the base; a split
 * ring's is a 16-bit available index) and SET_VRING_ENABLE (0 or 1). Both fields are unsigned.
 */
public record VringState(long index, long num) {
    public static final int SIZE = 8;

    public VringState {
        Payloads.checkU32("index", index);
        Payloads.checkU32("num", num);
    }

    public static VringState decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        Payloads.requireSize(request, payload, SIZE);
        return new VringState(Payloads.u32(payload, 0), Payloads.u32(payload, 4));
    }

    public byte[] encode() {
        return Payloads.buffer(SIZE).putInt((int) index).putInt((int) num).array();
    }
}
