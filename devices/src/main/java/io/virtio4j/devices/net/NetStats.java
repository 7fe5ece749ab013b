package io.virtio4j.devices.net;

import io.virtio4j.devices.metrics.Counters;
import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.devices.metrics.QueueMetrics;

/**
 * Counters of one queue pair: per queue (direction) in DPDK vhost's per-virtqueue vocabulary (good packets and bytes,
 * multicast, broadcast, size bins, guest notifications sent and suppressed) plus ours (drops, kicks, the tap mode's
 * polling discipline), and per pair the thread's wake-ups. Written by the pair's thread only, once per pass from the
 * pass's own counts ({@link FrameCounts}), so the per-frame path does no shared store; read by the statistics printer
 * and the metrics scraper at any time (see {@link Counters} for why opaque accesses are enough).
 *
 * <p>{@link #RX} and {@link #TX} in this class's API name the virtqueue as virtio-net does: {@link #RX} is the
 * guest's receive queue ({@code 2p}: frames delivered to the guest, "to guest"), {@link #TX} its transmit queue
 * ({@code 2p + 1}: frames the guest sent, "from guest"). The exposition's {@code direction} label is DPDK's, the
 * back-end's, the other way round ({@link #collect}). Bytes are the Ethernet frame's, without the virtio-net header and without a CRC (as DPDK counts
 * {@code pkt_len}). The wake-up, EAGAIN and registration counters are those of the tap mode's polling discipline (see
 * {@link TapPolling}).
 */
public final class NetStats {
    /** The guest's receive queue: frames to the guest. */
    public static final int RX = 0;
    /** The guest's transmit queue: frames from the guest. */
    public static final int TX = 1;

    // ---- per direction: counter d * PER_DIRECTION + one of these ----
    static final int PACKETS = 0;
    static final int BYTES = 1;
    static final int MULTICAST = 2;
    static final int BROADCAST = 3;
    /** {@link #SIZE_BINS} counters from here: see {@link #sizeBin}. */
    static final int SIZE = 4;
    /** DPDK's size bins: undersize (below 64), 64, 65-127, 128-255, 256-511, 512-1023, 1024-1518, 1519 and up. */
    public static final int SIZE_BINS = 8;
    static final int DROPS = SIZE + SIZE_BINS;
    static final int KICKS = DROPS + 1;
    static final int NOTIFICATIONS = KICKS + 1;
    static final int SUPPRESSED = NOTIFICATIONS + 1;
    static final int EAGAIN = SUPPRESSED + 1;
    static final int WEIGHT_LIMITED = EAGAIN + 1;
    static final int RING_EMPTY = WEIGHT_LIMITED + 1;
    static final int PER_DIRECTION = RING_EMPTY + 1;
    // ---- per pair ----
    static final int WAKEUPS = 2 * PER_DIRECTION;
    static final int SPURIOUS_WAKEUPS = WAKEUPS + 1;
    static final int TAP_REGISTRATIONS = SPURIOUS_WAKEUPS + 1;
    static final int TAP_READ_CALLS = TAP_REGISTRATIONS + 1;
    private static final int COUNT = TAP_READ_CALLS + 1;

    /** The size bins' names, DPDK's, as metric names take them. */
    private static final String[] SIZE_NAMES = {"undersize_packets", "size_64_packets", "size_65_127_packets",
            "size_128_255_packets", "size_256_511_packets", "size_512_1023_packets", "size_1024_1518_packets",
            "size_1519_max_packets"};
    private static final String[] SIZE_RANGES = {"fewer than 64", "exactly 64", "65 to 127", "128 to 255",
            "256 to 511", "512 to 1023", "1024 to 1518", "1519 or more"};

    private final Counters c = new Counters(COUNT);

    /** The size bin of a frame of {@code length} bytes (Ethernet header on, no CRC): DPDK's bins. */
    public static int sizeBin(long length) {
        if (length < 64) {
            return 0;
        }
        if (length == 64) {
            return 1;
        }
        if (length < 1024) {
            return 59 - Long.numberOfLeadingZeros(length); // 65-127: 7 significant bits -> 2, ..., 512-1023 -> 5
        }
        return length < 1519 ? 6 : 7;
    }

    // ---- written by the pair's thread ----

    void add(int direction, int counter, long delta) {
        c.add(direction * PER_DIRECTION + counter, delta);
    }

    void addPair(int counter, long delta) {
        c.add(counter, delta);
    }

    // ---- read by anyone ----

    private long get(int direction, int counter) {
        return c.get(direction * PER_DIRECTION + counter);
    }

    /** Good frames on the queue of {@code direction} ({@link #RX} or {@link #TX}). */
    public long packets(int direction) {
        return get(direction, PACKETS);
    }

    /** Their bytes. */
    public long bytes(int direction) {
        return get(direction, BYTES);
    }

    /** Good frames whose destination is a multicast address other than broadcast. */
    public long multicast(int direction) {
        return get(direction, MULTICAST);
    }

    /** Good frames to the broadcast address. */
    public long broadcast(int direction) {
        return get(direction, BROADCAST);
    }

    /** Good frames in size bin {@code bin} (see {@link #sizeBin}). */
    public long sizeBinCount(int direction, int bin) {
        return get(direction, SIZE + java.util.Objects.checkIndex(bin, SIZE_BINS));
    }

    /** Frames dropped on the queue of {@code direction}. */
    public long drops(int direction) {
        return get(direction, DROPS);
    }

    /** Kicks read from that queue's eventfd. */
    public long kicks(int direction) {
        return get(direction, KICKS);
    }

    /** Used-buffer notifications sent on that queue. */
    public long notifications(int direction) {
        return get(direction, NOTIFICATIONS);
    }

    /**
     * Used-buffer publications on that queue after which the driver wanted no notification (EVENT_IDX or
     * NO_INTERRUPT); see {@link QueueMetrics#GUEST_NOTIFICATIONS_SUPPRESSED_HELP} for how that differs from DPDK.
     */
    public long notificationsSuppressed(int direction) {
        return get(direction, SUPPRESSED);
    }

    /** Frames the guest transmitted (taken from its transmit queue). */
    public long fromGuestPackets() {
        return packets(TX);
    }

    public long fromGuestBytes() {
        return bytes(TX);
    }

    /**
     * Transmitted frames dropped: malformed, refused by the tap, or (reflector modes) no receive buffer to return them
     * in; such a frame was received whole and is also in {@link #fromGuestPackets}, so the two overlap in the
     * reflector modes (the RESULT line's RX-packets and RX-dropped keep that meaning; peers/ scripts read them).
     */
    public long fromGuestDrops() {
        return drops(TX);
    }

    /** Frames delivered to the guest (put on its receive queue). */
    public long toGuestPackets() {
        return packets(RX);
    }

    public long toGuestBytes() {
        return bytes(RX);
    }

    /**
     * Frames for the guest dropped (tap mode): larger than the receive buffers, or carrying offloads the guest did not
     * negotiate. A reflection that found no receive buffer is counted in {@link #fromGuestDrops}, not here.
     */
    public long toGuestDrops() {
        return drops(RX);
    }

    /** Kicks read from the transmit queue's eventfd. */
    public long kicks() {
        return kicks(TX);
    }

    /** Used-buffer notifications sent on either queue. */
    public long notifications() {
        return notifications(RX) + notifications(TX);
    }

    /** Returns from epoll_wait with at least one kick or tap event (a control request alone does not count). */
    public long wakeups() {
        return c.get(WAKEUPS);
    }

    /** Wake-ups after which a full pass found nothing to do. */
    public long spuriousWakeups() {
        return c.get(SPURIOUS_WAKEUPS);
    }

    /** Reads of the tap that found no frame (EAGAIN). */
    public long rxEagain() {
        return get(RX, EAGAIN);
    }

    /** Writes to the tap it could not take (EAGAIN): the frame stays in the ring until EPOLLOUT. */
    public long txEagain() {
        return get(TX, EAGAIN);
    }

    /** Times a frame from the tap waited because the guest's receive ring was empty. */
    public long rxRingEmpty() {
        return get(RX, RING_EMPTY);
    }

    /** Handler runs (either direction) that stopped at the weight with work possibly left, and went round the loop instead. */
    public long weightLimited() {
        return get(RX, WEIGHT_LIMITED) + get(TX, WEIGHT_LIMITED);
    }

    /** epoll_ctl calls on the tap (ADD, MOD, DEL): the price of changing what is watched. */
    public long tapRegistrations() {
        return c.get(TAP_REGISTRATIONS);
    }

    /**
     * System calls that read the tap: one io_uring_enter per batch of reads, or one read(2) per frame where io_uring
     * is unavailable. Frames to the guest per call tell how well reads are batched.
     */
    public long tapReadCalls() {
        return c.get(TAP_READ_CALLS);
    }

    /** A new object holding this plus {@code other} (null counts as zero). */
    public NetStats plus(NetStats other) {
        NetStats s = new NetStats();
        s.c.addAll(c);
        if (other != null) {
            s.c.addAll(other.c);
        }
        return s;
    }

    /**
     * Adds the samples of {@code pairs} (pair {@code p}'s statistics at index {@code p}) to {@code out}. Per queue,
     * labelled {@code device}, {@code queue} (the virtqueue index), {@code qp} (the pair, index / 2) and
     * {@code direction} in DPDK vhost's sense, the back-end's: {@code rx} on the guest's transmit queue (odd index,
     * frames the back-end receives from the guest), {@code tx} on its receive queue (even index, frames the back-end
     * sends to the guest), as the RESULT line's RX and TX. The thread's counters are labelled {@code device} and
     * {@code qp} only.
     */
    static void collect(PrometheusText out, String device, NetStats[] pairs) {
        perQueue(out, device, pairs, QueueMetrics.GOOD_PACKETS, QueueMetrics.GOOD_PACKETS_HELP, PACKETS);
        perQueue(out, device, pairs, QueueMetrics.GOOD_BYTES, QueueMetrics.GOOD_BYTES_HELP, BYTES);
        perQueue(out, device, pairs, "virtio4j_multicast_packets_total",
                "Good frames to a multicast destination (broadcast not included).", MULTICAST);
        perQueue(out, device, pairs, "virtio4j_broadcast_packets_total", "Good frames to the broadcast destination.",
                BROADCAST);
        for (int b = 0; b < SIZE_BINS; b++) {
            perQueue(out, device, pairs, "virtio4j_" + SIZE_NAMES[b] + "_total", "Good frames of "
                    + SIZE_RANGES[b] + " bytes (Ethernet header on, no CRC).", SIZE + b);
        }
        perQueue(out, device, pairs, "virtio4j_dropped_packets_total", "Frames dropped. rx (from the guest): "
                + "malformed, refused by the tap, or, in the reflector modes, not returned because the guest's receive "
                + "queue had no buffer (such a frame is also counted good on rx: it was received). tx (to the guest, "
                + "tap mode): larger than the receive buffers or carrying offloads the guest did not negotiate.", DROPS);
        QueueMetrics.notificationFamilies(out, 2 * pairs.length, q -> pairs[q >> 1].get(q & 1, KICKS),
                q -> pairs[q >> 1].get(q & 1, NOTIFICATIONS), q -> pairs[q >> 1].get(q & 1, SUPPRESSED),
                q -> queueLabels(device, q));
        perQueue(out, device, pairs, "virtio4j_tap_eagain_total", "Tap mode: on tx (to the guest), tap reads that "
                + "found no frame; on rx (from the guest), tap writes the tap could not take.", EAGAIN);
        perQueue(out, device, pairs, "virtio4j_weight_limited_total", "Handler runs that stopped at the weight with "
                + "work possibly left.", WEIGHT_LIMITED);
        out.counter("virtio4j_receive_ring_empty_total", "Tap mode: times a frame from the tap waited because the "
                + "guest's receive queue (direction tx) had no buffer.").samples(pairs.length,
                p -> pairs[p].get(RX, RING_EMPTY), p -> queueLabels(device, 2 * p));
        perPair(out, device, pairs, "virtio4j_wakeups_total", "Returns of the pair's thread from epoll_wait with at "
                + "least one kick or tap event.", WAKEUPS);
        perPair(out, device, pairs, "virtio4j_spurious_wakeups_total", "Wake-ups after which a full pass found "
                + "nothing to do.", SPURIOUS_WAKEUPS);
        perPair(out, device, pairs, "virtio4j_tap_registrations_total", "Tap mode: epoll_ctl calls on the tap (ADD, "
                + "MOD, DEL).", TAP_REGISTRATIONS);
        perPair(out, device, pairs, "virtio4j_tap_read_calls_total", "Tap mode: system calls that read the tap (an "
                + "io_uring_enter per batch of reads, or a read(2) per frame).", TAP_READ_CALLS);
    }

    /** Queue {@code q}'s counter: virtqueue {@code q} is direction {@code q & 1} ({@link #RX}, {@link #TX}) of pair q / 2. */
    private static void perQueue(PrometheusText out, String device, NetStats[] pairs, String name, String help,
                                 int counter) {
        out.counter(name, help).samples(2 * pairs.length, q -> pairs[q >> 1].get(q & 1, counter),
                q -> queueLabels(device, q));
    }

    private static void perPair(PrometheusText out, String device, NetStats[] pairs, String name, String help,
                                int counter) {
        out.counter(name, help).samples(pairs.length, p -> pairs[p].c.get(counter),
                p -> new String[] {"device", device, "qp", Integer.toString(p)});
    }

    /** Virtqueue {@code q}'s labels; its direction is DPDK's, the back-end's (see {@link #collect}). */
    private static String[] queueLabels(String device, int q) {
        return new String[] {"device", device, "queue", Integer.toString(q), "qp", Integer.toString(q >> 1),
                "direction", (q & 1) == TX ? "rx" : "tx"};
    }

    /** The line {@code --stats-period} prints: the counters a person looks at first. */
    @Override
    public String toString() {
        return "from-guest packets=" + fromGuestPackets() + " bytes=" + fromGuestBytes() + " drops=" + fromGuestDrops()
                + " multicast=" + multicast(TX) + " broadcast=" + broadcast(TX)
                + " | to-guest packets=" + toGuestPackets() + " bytes=" + toGuestBytes() + " drops=" + toGuestDrops()
                + " | kicks from-guest=" + kicks(TX) + " to-guest=" + kicks(RX)
                + " | notifications from-guest=" + notifications(TX) + " to-guest=" + notifications(RX)
                + " suppressed from-guest=" + notificationsSuppressed(TX) + " to-guest=" + notificationsSuppressed(RX)
                + " | wakeups=" + wakeups() + " spurious=" + spuriousWakeups() + " tap-eagain read=" + rxEagain()
                + " write=" + txEagain() + " receive-ring-empty=" + rxRingEmpty() + " weight-limited=" + weightLimited()
                + " tap-registrations=" + tapRegistrations() + " tap-read-calls=" + tapReadCalls();
    }
}
