package io.virtio4j.core.layout;

/**
 * Byte layout of vhost-user's inflight area (VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD): the shared memory in which a
 * back-end records the buffers it has taken from a ring and not yet returned, so that a restarted back-end can
 * resubmit them. The back-end allocates the area and is the only one to read it. The byte layout (sizes, offsets)
 * is the one DPDK ({@code rte_vhost.h}) and libvhost-user use, but the meanings are not all shared, so an area a
 * front-end kept (QEMU) across a change of back-end works only one way: a split region written by libvhost-user or
 * DPDK recovers here, while theirs would mishandle ours (a virtio4j batch links several heads from
 * {@code last_batch_head}, of which they clear only the first); packed field meanings (free_head as the used batch,
 * old_free_head as the free list, commit by the ring slot's flags) are virtio4j's own, so a packed region
 * interoperates with no other back-end.
 *
 * <p>One queue region per virtqueue, back to back, each {@link #queueRegionBytes} long (a multiple of
 * {@link #REGION_ALIGN}). Little-endian, C natural alignment. The front-end can write every byte of it: a reader
 * treats every field as hostile.
 */
public final class InflightLayout {
    private InflightLayout() {
    }

    /** Each queue region starts on a cache line. */
    public static final int REGION_ALIGN = 64;

    /** The version a region carries once a back-end has initialised it; 0 is a fresh (or reset) region. */
    public static final int VERSION = 1;

    // ---- split: header (16 bytes) then one 16-byte entry per descriptor ----
    public static final int SPLIT_FEATURES = 0;
    public static final int SPLIT_VERSION = 8;
    public static final int SPLIT_DESC_NUM = 10;
    public static final int SPLIT_LAST_BATCH_HEAD = 12;
    public static final int SPLIT_USED_IDX = 14;
    public static final int SPLIT_HEADER_SIZE = 16;

    public static final int SPLIT_ENTRY_SIZE = 16;
    /** u8: 1 while the head descriptor's buffer is in flight. */
    public static final int SPLIT_ENTRY_INFLIGHT = 0;
    /** u16: links the heads of the last used batch. */
    public static final int SPLIT_ENTRY_NEXT = 6;
    /** u64: the order in which heads were fetched. */
    public static final int SPLIT_ENTRY_COUNTER = 8;

    // ---- packed: header (32 bytes) then one 32-byte entry per descriptor ----
    public static final int PACKED_FEATURES = 0;
    public static final int PACKED_VERSION = 8;
    public static final int PACKED_DESC_NUM = 10;
    public static final int PACKED_FREE_HEAD = 12;
    public static final int PACKED_OLD_FREE_HEAD = 14;
    public static final int PACKED_USED_IDX = 16;
    public static final int PACKED_OLD_USED_IDX = 18;
    public static final int PACKED_USED_WRAP_COUNTER = 20;
    public static final int PACKED_OLD_USED_WRAP_COUNTER = 21;
    public static final int PACKED_HEADER_SIZE = 32;

    public static final int PACKED_ENTRY_SIZE = 32;
    public static final int PACKED_ENTRY_INFLIGHT = 0;
    /** u16: free-list link. */
    public static final int PACKED_ENTRY_NEXT = 2;
    /** u16: the entry of the buffer's last descriptor. */
    public static final int PACKED_ENTRY_LAST = 4;
    /** u16: descriptors in the buffer. */
    public static final int PACKED_ENTRY_NUM = 6;
    public static final int PACKED_ENTRY_COUNTER = 8;
    public static final int PACKED_ENTRY_ID = 16;
    public static final int PACKED_ENTRY_FLAGS = 18;
    public static final int PACKED_ENTRY_LEN = 20;
    public static final int PACKED_ENTRY_ADDR = 24;

    /**
     * Bytes of one queue's region: the header and one entry per descriptor, rounded up to {@link #REGION_ALIGN}.
     * Split, queue size 1024: 16,448 (DPDK and libvhost-user agree).
     */
    public static long queueRegionBytes(RingFormat format, int queueSize) {
        if (!format.isValidQueueSize(queueSize)) {
            throw new IllegalArgumentException("not a " + format + " queue size: " + queueSize);
        }
        long raw = format == RingFormat.PACKED
                ? PACKED_HEADER_SIZE + (long) PACKED_ENTRY_SIZE * queueSize
                : SPLIT_HEADER_SIZE + (long) SPLIT_ENTRY_SIZE * queueSize;
        return (raw + REGION_ALIGN - 1) & -REGION_ALIGN;
    }

    /** Bytes of a whole area: {@code queues} regions of {@link #queueRegionBytes}. Split, 4 x 1024: 65,792. */
    public static long areaBytes(RingFormat format, int queues, int queueSize) {
        if (queues <= 0) {
            throw new IllegalArgumentException("queues must be positive: " + queues);
        }
        return queues * queueRegionBytes(format, queueSize);
    }
}
