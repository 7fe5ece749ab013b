package io.virtio4j.core.feature;

import io.virtio4j.core.ordering.Ordering;

/** Transport-independent virtio feature bits that shape a ring (virtio 1.x, section 6). */
public final class VirtioFeatures {
    private VirtioFeatures() {
    }

    public static final int NOTIFY_ON_EMPTY = 24;
    public static final int ANY_LAYOUT = 27;
    public static final int INDIRECT_DESC = 28;
    public static final int EVENT_IDX = 29;
    public static final int VERSION_1 = 32;
    public static final int ACCESS_PLATFORM = 33;
    public static final int RING_PACKED = 34;
    public static final int IN_ORDER = 35;
    public static final int ORDER_PLATFORM = 36;
    public static final int NOTIFICATION_DATA = 38;
    public static final int RING_RESET = 40;

    public static long bit(int feature) {
        return 1L << feature;
    }

    public static boolean has(long features, int feature) {
        return (features & bit(feature)) != 0;
    }

    /**
     * Barrier strength a queue must use under {@code features}: STRONG when VIRTIO_F_ORDER_PLATFORM is
     * negotiated (the peer behaves like hardware), otherwise the {@code requested} mode.
     */
    public static Ordering ordering(long features, Ordering requested) {
        return has(features, ORDER_PLATFORM) ? Ordering.STRONG : requested;
    }
}
