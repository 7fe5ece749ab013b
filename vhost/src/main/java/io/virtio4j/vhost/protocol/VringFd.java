package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;

/**
 * The u64 payload of SET_VRING_KICK, SET_VRING_CALL and SET_VRING_ERR: the ring index in bits 0-7 and the NOFD
 * flag in bit 8 (no descriptor comes with the message: kick NOFD means poll the ring, call NOFD means the
 * front-end polls for used buffers). Every other bit must be clear.
 */
public record VringFd(int index, boolean noFd) {
    public static final int SIZE = 8;
    public static final long INDEX_MASK = 0xFF;
    public static final long NOFD = 0x100;

    public VringFd {
        if (index < 0 || index > INDEX_MASK) {
            throw new IllegalArgumentException("ring index " + index + " does not fit the 8-bit index field");
        }
    }

    public static VringFd decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        Payloads.requireSize(request, payload, SIZE);
        long p = Payloads.u64(payload, 0);
        long unknown = p & ~(INDEX_MASK | NOFD);
        if (unknown != 0) {
            throw new VhostUserProtocolException(request, "u64", p, "bits 0x" + Long.toHexString(unknown)
                    + " are neither the ring index nor the NOFD flag");
        }
        return new VringFd((int) (p & INDEX_MASK), (p & NOFD) != 0);
    }

    public byte[] encode() {
        return new U64(index | (noFd ? NOFD : 0)).encode();
    }
}
