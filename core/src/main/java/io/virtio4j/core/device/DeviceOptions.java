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
 * @param inOrder           VIRTIO_F_IN_ORDER negotiated: the driver makes descriptors available in ring order and
 *                          the device uses buffers in the order they were made available
 */
public record DeviceOptions(Ordering ordering, boolean eventIdx, boolean indirectDesc, boolean cachedAvailOnEnable,
                            boolean inOrder) {

    public DeviceOptions {
        if (ordering == null) {
            throw new IllegalArgumentException("ordering is required");
        }
    }

    /** Weak barriers, event index and indirect descriptors on, cached avail index on enable. */
    public static DeviceOptions defaults() {
        return new DeviceOptions(Ordering.WEAK, true, true, true, false);
    }

    /**
     * Options for a queue under negotiated {@code features}: EVENT_IDX, INDIRECT_DESC and IN_ORDER as negotiated,
     * and STRONG ordering forced by VIRTIO_F_ORDER_PLATFORM.
     */
    public static DeviceOptions fromFeatures(long features, Ordering requested, boolean cachedAvailOnEnable) {
        return new DeviceOptions(VirtioFeatures.ordering(features, requested),
                VirtioFeatures.has(features, VirtioFeatures.EVENT_IDX),
                VirtioFeatures.has(features, VirtioFeatures.INDIRECT_DESC), cachedAvailOnEnable,
                VirtioFeatures.has(features, VirtioFeatures.IN_ORDER));
    }

    public DeviceOptions withOrdering(Ordering o) {
        return new DeviceOptions(o, eventIdx, indirectDesc, cachedAvailOnEnable, inOrder);
    }

    public DeviceOptions withEventIdx(boolean on) {
        return new DeviceOptions(ordering, on, indirectDesc, cachedAvailOnEnable, inOrder);
    }

    public DeviceOptions withIndirectDesc(boolean on) {
        return new DeviceOptions(ordering, eventIdx, on, cachedAvailOnEnable, inOrder);
    }

    public DeviceOptions withCachedAvailOnEnable(boolean on) {
        return new DeviceOptions(ordering, eventIdx, indirectDesc, on, inOrder);
    }

    public DeviceOptions withInOrder(boolean on) {
        return new DeviceOptions(ordering, eventIdx, indirectDesc, cachedAvailOnEnable, on);
    }
}
