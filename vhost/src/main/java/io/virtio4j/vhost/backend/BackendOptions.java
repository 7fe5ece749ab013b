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
     * regions one by one with ADD_MEM_REG up to it. The data path's guest-address lookup
     * ({@code GuestMemory.find}) is a binary search over the regions sorted by start, so many regions stay cheap;
     * only the control path's front-end-address lookups ({@code MemoryTable.userSlice}, {@code userToGuest}, once per
     * ring address set) scan them linearly.
     */
    public static final int DEFAULT_MAX_MEM_SLOTS = 509;

    public BackendOptions {
        if (ordering == null || maxMemSlots < 1) {
            throw new IllegalArgumentException("ordering required and maxMemSlots >= 1");
        }
    }

    /**
     * The options {@code virtio4j serve} runs a back-end with, given its {@code --barriers} and {@code --cached-avail}
     * (serve blk and rng: {@link #defaults()}); everything else as {@link #defaults()}. The one place they are built,
     * so that a back-end served in process as serve builds it (the experiments' vhost-user rows) is that back-end.
     */
    public static BackendOptions of(Ordering ordering, boolean cachedAvailOnEnable) {
        return new BackendOptions(ordering, cachedAvailOnEnable, DEFAULT_MAX_MEM_SLOTS);
    }

    /** Weak barriers, cached avail index on re-enable, {@link #DEFAULT_MAX_MEM_SLOTS}: serve's defaults. */
    public static BackendOptions defaults() {
        return of(Ordering.WEAK, true);
    }
}
