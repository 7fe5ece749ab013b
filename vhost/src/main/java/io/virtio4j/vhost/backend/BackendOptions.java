package io.virtio4j.vhost.backend;

import io.virtio4j.core.ordering.Ordering;

/**
 * Ring policies the back-end applies to every queue it starts, and its limits.
 *
 * @param ordering            barrier strength (VIRTIO_F_ORDER_PLATFORM, if negotiated, forces STRONG)
 * @param cachedAvailOnEnable device-side cached avail index on re-enable
 * @param maxMemSlots         GET_MAX_MEM_SLOTS answer: most regions ADD_MEM_REG may build up
 */
public record BackendOptions(Ordering ordering, boolean cachedAvailOnEnable, int maxMemSlots) {
    /**
     * The GET_MAX_MEM_SLOTS answer by default: libvhost-user's VHOST_USER_MAX_RAM_SLOTS, a count every
     * architecture's KVM memory slots can back. A front-end with hot-plugged memory (QEMU's virtio-mem, DIMMs) adds
     * regions one by one with ADD_MEM_REG up to it; lookups stay linear over the regions, which the common case (a
     * handful) keeps cheap.
     */
    public static final int DEFAULT_MAX_MEM_SLOTS = 509;

    public BackendOptions {
        if (ordering == null || maxMemSlots < 1) {
            throw new IllegalArgumentException("ordering required and maxMemSlots >= 1");
        }
    }

    public static BackendOptions defaults() {
        return new BackendOptions(Ordering.WEAK, true, DEFAULT_MAX_MEM_SLOTS);
    }
}
