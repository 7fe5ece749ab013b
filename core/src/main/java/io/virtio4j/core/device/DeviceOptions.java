package io.virtio4j.core.device;

import io.virtio4j.core.policy.Ordering;

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
