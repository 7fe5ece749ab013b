package io.virtio4j.devices.net;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * One direction's counts of the current pass, on the pair's thread only: plain fields bumped per frame and added to the
 * pair's {@link NetStats} once at the pass's end ({@link #foldInto}), so the per-frame path does no shared store.
 * Every worker counts its frames here: the one place a frame's size bin and destination kind are decided.
 */
final class FrameCounts {
    private long packets;
    private long bytes;
    private long multicast;
    private long broadcast;
    private long drops;
    private final long[] bins = new long[NetStats.SIZE_BINS];

    /**
     * The first 8 bytes at a frame's destination address, the first octet in the low byte whatever the machine's
     * order: the address is octets 0-5 ({@link #ADDRESS_BITS}). One load gives all {@link #good(long, long, int)}
     * needs, so a caller that reads it straight from guest memory reads the octets once (a driver rewriting the frame
     * meanwhile cannot make two reads disagree). Every frame counted good has at least an Ethernet header, 14 bytes.
     */
    static final ValueLayout.OfLong DESTINATION_WORD =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final long ADDRESS_BITS = 0xFFFF_FFFF_FFFFL;

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
        good(frame.get(DESTINATION_WORD, destination), length, bin);
    }

    /**
     * A good frame of {@code length} bytes in size bin {@code bin} whose destination address starts {@code
     * destinationWord} ({@link #DESTINATION_WORD}): the one place a frame's size bin and destination kind are counted.
     */
    void good(long destinationWord, long length, int bin) {
        packets++;
        bytes += length;
        bins[bin]++;
        // The group bit (I/G) of the first octet marks multicast; broadcast is the all-ones group address, counted
        // apart as DPDK does (its multicast count leaves broadcast out). Branches, not arithmetic: a branchless form
        // (one 8-byte load, multicast += group - allOnes) measured 10-30% slower per reflected frame than these
        // branches did with their byte, int and short loads, in 40 interleaved old/new blocks with a random mix of
        // kinds (most frames are unicast and skip the rest); the one load with the branches was not timed apart.
        if ((destinationWord & 1) != 0) {
            if ((destinationWord & ADDRESS_BITS) == ADDRESS_BITS) {
                broadcast++;
            } else {
                multicast++;
            }
        }
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
            if (multicast != 0) {
                stats.add(direction, NetStats.MULTICAST, multicast);
            }
            if (broadcast != 0) {
                stats.add(direction, NetStats.BROADCAST, broadcast);
            }
            for (int b = 0; b < bins.length; b++) {
                if (bins[b] != 0) {
                    stats.add(direction, NetStats.SIZE + b, bins[b]);
                    bins[b] = 0;
                }
            }
        }
        if (drops != 0) {
            stats.add(direction, NetStats.DROPS, drops);
        }
        packets = bytes = multicast = broadcast = drops = 0;
    }
}
