package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;

/**
 * The SET_VRING_ADDR payload: {@code u32 index; u32 flags; u64 desc; u64 used; u64 avail; u64 log}. The three
 * ring areas are front-end virtual addresses; {@code log} is the used ring's guest-physical address for dirty
 * logging, which only counts with {@link #F_LOG}.
 */
public record VringAddress(long index, long flags, long desc, long used, long avail, long log) {
    public static final int SIZE = 40;
    /** VHOST_VRING_F_LOG: log writes to the used ring. The only flag there is. */
    public static final long F_LOG = 0x1;

    public VringAddress {
        Payloads.checkU32("index", index);
        Payloads.checkU32("flags", flags);
    }

    public static VringAddress decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        Payloads.requireSize(request, payload, SIZE);
        long flags = Payloads.u32(payload, 4);
        if ((flags & ~F_LOG) != 0) {
            throw new VhostUserProtocolException(request, "flags", flags, "bits 0x" + Long.toHexString(flags & ~F_LOG)
                    + " are not VHOST_VRING_F_LOG, the only ring address flag");
        }
        return new VringAddress(Payloads.u32(payload, 0), flags, Payloads.u64(payload, 8), Payloads.u64(payload, 16),
                Payloads.u64(payload, 24), Payloads.u64(payload, 32));
    }

    public byte[] encode() {
        return Payloads.buffer(SIZE).putInt((int) index).putInt((int) flags).putLong(desc).putLong(used).putLong(avail)
                .putLong(log).array();
    }
}
