package io.virtio4j.core.device;

import io.virtio4j.core.error.InvalidQueueStateException;

/**
 * Where a device-side queue stands, as a value: the next ring position it will read buffers from and the next
 * one it will write used entries to, each with its wrap counter. What a queue is stopped at
 * ({@link DeviceQueue#state()}) and restarted from ({@link DeviceQueue#restart}); the queue re-validates it
 * against its own size and format on restart, because a state can come from the other side (vhost-user's
 * SET_VRING_BASE) or from a file (migration).
 *
 * <p>Split rings count with free-running 16-bit indices ({@code nextAvail}, {@code nextUsed} in [0, 65535]) and
 * ignore the wrap counters. Packed rings count ring slots ({@code nextAvail}, {@code nextUsed} below the queue
 * size) and flip a wrap counter each time a position passes the ring's end; both counters start at 1 (true).
 *
 * @param nextAvail     next available position the device reads (split: last_avail_idx)
 * @param availWrap     packed: the wrap counter of {@code nextAvail}
 * @param nextUsed      next used position the device writes (split: the used.idx it will publish next)
 * @param usedWrap      packed: the wrap counter of {@code nextUsed}
 */
public record QueueState(int nextAvail, boolean availWrap, int nextUsed, boolean usedWrap) {
    /** A fresh ring: every position 0, wrap counters 1. */
    public static final QueueState INITIAL = new QueueState(0, true, 0, true);

    private static final int PACKED_INDEX_MASK = 0x7FFF;

    public QueueState {
        if (nextAvail < 0 || nextAvail > 0xFFFF || nextUsed < 0 || nextUsed > 0xFFFF) {
            throw new InvalidQueueStateException(nextAvail < 0 || nextAvail > 0xFFFF ? "nextAvail" : "nextUsed",
                    nextAvail < 0 || nextAvail > 0xFFFF ? nextAvail : nextUsed, "is not a 16-bit ring position");
        }
    }

    /** A split ring's state: 16-bit indices, no wrap counters. */
    public static QueueState split(int nextAvail, int nextUsed) {
        return new QueueState(nextAvail & 0xFFFF, true, nextUsed & 0xFFFF, true);
    }

    /**
     * Decodes the packed ring base of vhost-user's SET_VRING_BASE and DPDK's {@code rte_vhost_get_vring_base}:
     * bits 0-14 the next available position, bit 15 its wrap counter, bits 16-30 the next used position, bit 31
     * its wrap counter. The queue checks the positions against its size when it restarts from it.
     *
     * @throws InvalidQueueStateException when bits above 31 are set
     */
    public static QueueState fromPackedBase(long base) {
        if ((base >>> 32) != 0) {
            throw new InvalidQueueStateException("base", base, "a packed ring base has 32 bits");
        }
        return new QueueState((int) (base & PACKED_INDEX_MASK), (base & 0x8000) != 0,
                (int) ((base >>> 16) & PACKED_INDEX_MASK), (base & 0x8000_0000L) != 0);
    }

    /** The packed ring base encoding of this state (see {@link #fromPackedBase}). */
    public long toPackedBase() {
        return (nextAvail & PACKED_INDEX_MASK) | (availWrap ? 0x8000L : 0)
                | ((long) (nextUsed & PACKED_INDEX_MASK) << 16) | (usedWrap ? 0x8000_0000L : 0);
    }
}
