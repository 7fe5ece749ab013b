package io.virtio4j.core.device;

import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.feature.VirtioFeatures;

/**
 * Negotiated features and run-time policies of one device-side queue.
 *
 * @param ordering          barrier strength
 * @param eventIdx          VIRTIO_F_EVENT_IDX negotiated
 * @param indirectDesc      VIRTIO_F_INDIRECT_DESC negotiated: INDIRECT descriptors are accepted
 * @param cachedAvailOnEnable store the avail index read while re-enabling kicks as the cached index, so the
 *                          next pop does not read {@code avail.idx} from shared memory again
 */
public record DeviceOptions(Ordering ordering, boolean eventIdx, boolean indirectDesc, boolean cachedAvailOnEnable) {

    public DeviceOptions {
        if (ordering == null) {
            throw new IllegalArgumentException("ordering is required");
        }
    }

    /** Weak barriers, event index and indirect descriptors on, cached avail index on enable. */
    public static DeviceOptions defaults() {
        return new DeviceOptions(Ordering.WEAK, true, true, true);
    }

    /**
     * Options for a queue under negotiated {@code features}: EVENT_IDX and INDIRECT_DESC as negotiated, and STRONG
     * ordering forced by VIRTIO_F_ORDER_PLATFORM.
     */
    public static DeviceOptions fromFeatures(long features, Ordering requested, boolean cachedAvailOnEnable) {
        return new DeviceOptions(VirtioFeatures.ordering(features, requested),
                VirtioFeatures.has(features, VirtioFeatures.EVENT_IDX),
                VirtioFeatures.has(features, VirtioFeatures.INDIRECT_DESC), cachedAvailOnEnable);
    }

    public DeviceOptions withOrdering(Ordering o) {
        return new DeviceOptions(o, eventIdx, indirectDesc, cachedAvailOnEnable);
    }

    public DeviceOptions withEventIdx(boolean on) {
        return new DeviceOptions(ordering, on, indirectDesc, cachedAvailOnEnable);
    }

    public DeviceOptions withIndirectDesc(boolean on) {
        return new DeviceOptions(ordering, eventIdx, on, cachedAvailOnEnable);
    }

    public DeviceOptions withCachedAvailOnEnable(boolean on) {
        return new DeviceOptions(ordering, eventIdx, indirectDesc, on);
    }
}
