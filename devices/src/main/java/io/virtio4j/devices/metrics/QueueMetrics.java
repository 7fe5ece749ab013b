package io.virtio4j.devices.metrics;

import java.util.function.IntFunction;
import java.util.function.IntToLongFunction;

/**
 * The metric families every device's queues have, named once so that two devices in one scrape add to the same
 * family with the same help (DPDK vhost's per-virtqueue names where it has one, with our prefix and {@code _total}).
 */
public final class QueueMetrics {
    public static final String GOOD_PACKETS = "virtio4j_good_packets_total";
    public static final String GOOD_PACKETS_HELP = "Good frames: direction rx, "
            + "received from the guest (its transmit queue); tx, delivered to the guest (its receive queue).";
    public static final String GOOD_BYTES = "virtio4j_good_bytes_total";
    public static final String GOOD_BYTES_HELP = "Bytes of the good frames (Ethernet header on, virtio-net header "
            + "and CRC off).";
    public static final String KICKS = "virtio4j_kicks_total";
    public static final String KICKS_HELP = "Kicks (available-buffer notifications) read from the queue's eventfd.";
    public static final String GUEST_NOTIFICATIONS = "virtio4j_guest_notifications_total";
    public static final String GUEST_NOTIFICATIONS_HELP = "Used-buffer notifications sent to the guest (call "
            + "eventfd written).";
    public static final String GUEST_NOTIFICATIONS_SUPPRESSED = "virtio4j_guest_notifications_suppressed_total";
    public static final String GUEST_NOTIFICATIONS_SUPPRESSED_HELP = "Used-buffer publications after which the "
            + "driver wanted no notification (EVENT_IDX event index not crossed, or NO_INTERRUPT), so none was sent; "
            + "DPDK's counter of this name counts something else (interrupts skipped because one was already "
            + "pending) and counts nothing for these.";

    private QueueMetrics() {
    }

    /**
     * Adds the families every device's queues count the same way, kicks, guest notifications sent and suppressed, with
     * one sample per queue {@code q < queues}: {@code kicks.applyAsLong(q)} and so on, labelled {@code labels.apply(q)}.
     */
    public static void notificationFamilies(PrometheusText out, int queues, IntToLongFunction kicks,
                                            IntToLongFunction notifications, IntToLongFunction suppressed,
                                            IntFunction<String[]> labels) {
        out.counter(KICKS, KICKS_HELP).samples(queues, kicks, labels);
        out.counter(GUEST_NOTIFICATIONS, GUEST_NOTIFICATIONS_HELP).samples(queues, notifications, labels);
        out.counter(GUEST_NOTIFICATIONS_SUPPRESSED, GUEST_NOTIFICATIONS_SUPPRESSED_HELP)
                .samples(queues, suppressed, labels);
    }
}
