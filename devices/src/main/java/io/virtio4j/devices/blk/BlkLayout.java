package io.virtio4j.devices.blk;

/**
 * virtio-blk (device ID 2, virtio 1.2 section 5.2) in one descriptor class, shared by the device ({@code serve blk})
 * and the driver ({@link io.virtio4j.devices.blk.driver}): feature bits, request types, status values, the request
 * header and the DISCARD/WRITE_ZEROES segment layouts. Everything is little-endian; sector units are always 512
 * bytes, whatever {@code blk_size} says. The configuration space is {@link BlkConfig}.
 */
public final class BlkLayout {
    private BlkLayout() {
    }

    // ---- feature bits ----
    public static final int F_SIZE_MAX = 1;
    public static final int F_SEG_MAX = 2;
    public static final int F_GEOMETRY = 4;
    public static final int F_RO = 5;
    public static final int F_BLK_SIZE = 6;
    public static final int F_FLUSH = 9;
    public static final int F_TOPOLOGY = 10;
    public static final int F_CONFIG_WCE = 11;
    public static final int F_MQ = 12;
    public static final int F_DISCARD = 13;
    public static final int F_WRITE_ZEROES = 14;

    /** Protocol sector size: {@code sector} and segment {@code num_sectors} count these. */
    public static final int SECTOR = 512;
    public static final int SECTOR_SHIFT = 9;

    // ---- request types ----
    public static final int T_IN = 0;
    public static final int T_OUT = 1;
    public static final int T_FLUSH = 4;
    public static final int T_GET_ID = 8;
    public static final int T_DISCARD = 11;
    public static final int T_WRITE_ZEROES = 13;

    // ---- status byte ----
    public static final int S_OK = 0;
    public static final int S_IOERR = 1;
    public static final int S_UNSUPP = 2;

    // ---- request header (virtio_blk_outhdr): device-readable, 16 bytes ----
    public static final int HEADER_BYTES = 16;
    public static final int HEADER_TYPE = 0;
    public static final int HEADER_RESERVED = 4;
    public static final int HEADER_SECTOR = 8;
    /** The status: one device-writable byte, the last of the request. */
    public static final int STATUS_BYTES = 1;

    /** GET_ID answers this many bytes: an ASCII id padded with NULs. */
    public static final int ID_BYTES = 20;

    // ---- DISCARD / WRITE_ZEROES segment (virtio_blk_discard_write_zeroes), 16 bytes ----
    public static final int SEGMENT_BYTES = 16;
    public static final int SEGMENT_SECTOR = 0;
    public static final int SEGMENT_NUM_SECTORS = 8;
    public static final int SEGMENT_FLAGS = 12;
    /** Segment flag: the range may be deallocated (WRITE_ZEROES only). */
    public static final int SEGMENT_FLAG_UNMAP = 1;

    /** Feature bit {@code n} as a mask. */
    public static long bit(int n) {
        return 1L << n;
    }
}
