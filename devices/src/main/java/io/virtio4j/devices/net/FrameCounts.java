package io.virtio4j.devices.net;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One direction's counts of the current pass, on the pair's thread only: plain fields bumped per frame and added to the
 * pair's {@link NetStats} once at the pass's end ({@link #foldInto}), so the per-frame path does no shared store.
 * Every worker counts its frames here: the one place a frame's size bin and destination kind are decided.
 */
final class FrameCounts {
    private long packets;
    private long bytes;
    private long drops;
    /**
     * The size bins ({@link NetStats#sizeBin}) at 0 to {@link NetStats#SIZE_BINS} - 1, then the destination kinds:
     * unicast (not exposed: packets minus the other two), multicast, broadcast ({@link #KIND}).
     */
    private final long[] counts = new long[NetStats.SIZE_BINS + 3];
    private static final int KIND = NetStats.SIZE_BINS;

    /**
     * A good frame of {@code length} bytes (Ethernet header on, no virtio-net header) whose destination address is at
     * {@code destination} in {@code frame}: a copy on our side, so reading it costs no guest-memory access.
     */
    void good(MemorySegment frame, long destination, long length) {
        good(frame, destination, length, NetStats.sizeBin(length));
    }

    /**
     * The same with its size bin already known: a worker that counts one frame in both directions (a reflection)
     * decides the bin once.
     */
    void good(MemorySegment frame, long destination, long length, int bin) {
        packets++;
        bytes += length;
        counts[bin]++;
        // The group bit (I/G) of the first octet marks multicast; broadcast is the all-ones group address, counted
        // apart as DPDK does (its multicast count leaves broadcast out). Without a branch: the kind is group bit plus
        // all-ones (all ones has the group bit), 0 unicast, 1 multicast, 2 broadcast, and every frame adds one to its
        // kind's slot. The six bytes are on our copy, in the cache line the copy just wrote. The short is sign-
        // extended, so the AND is all ones exactly when both are.
        int group = frame.get(ValueLayout.JAVA_BYTE, destination) & 1;
        int all = (frame.get(ValueLayout.JAVA_INT_UNALIGNED, destination)
                & frame.get(ValueLayout.JAVA_SHORT_UNALIGNED, destination + 4)) == -1 ? 1 : 0;
        counts[KIND + group + all]++;
    }

    /** A frame dropped. */
    void drop() {
        drops++;
    }

    /** Good frames counted in this pass so far. */
    long packets() {
        return packets;
    }

    /** Their bytes. */
    long bytes() {
        return bytes;
    }

    /** Adds this pass's counts to {@code stats} under {@code direction} and starts the next pass at zero. */
    void foldInto(NetStats stats, int direction) {
        if ((packets | drops) == 0) {
            return;
        }
        if (packets != 0) {
            stats.add(direction, NetStats.PACKETS, packets);
            stats.add(direction, NetStats.BYTES, bytes);
            if (counts[KIND + 1] != 0) {
                stats.add(direction, NetStats.MULTICAST, counts[KIND + 1]);
            }
            if (counts[KIND + 2] != 0) {
                stats.add(direction, NetStats.BROADCAST, counts[KIND + 2]);
            }
            for (int b = 0; b < NetStats.SIZE_BINS; b++) {
                if (counts[b] != 0) {
                    stats.add(direction, NetStats.SIZE + b, counts[b]);
                }
            }
            java.util.Arrays.fill(counts, 0);
        }
        if (drops != 0) {
            stats.add(direction, NetStats.DROPS, drops);
        }
        packets = bytes = drops = 0;
    }
}
