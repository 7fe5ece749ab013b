package io.virtio4j.devices.blk;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The virtio-blk configuration space ({@code virtio_blk_config}, virtio 1.2 5.2.4), the fields this project uses:
 * what the device answers to GET_CONFIG ({@link #encode()}) and what a driver reads back ({@link #decode}). Each
 * field is valid only when its feature bit was offered (noted per field); the rest of the 96 bytes (geometry,
 * secure erase, zoned) is zero.
 *
 * @param capacity               size in 512-byte sectors (always)
 * @param sizeMax                largest single data segment in bytes (SIZE_MAX)
 * @param segMax                 most data segments per request (SEG_MAX)
 * @param blkSize                logical block size in bytes (BLK_SIZE)
 * @param physicalBlockExp       log2 of logical blocks per physical block (TOPOLOGY)
 * @param alignmentOffset        offset of the first aligned logical block (TOPOLOGY)
 * @param minIoSize              suggested minimum I/O size in blocks (TOPOLOGY)
 * @param optIoSize              optimal I/O size in blocks (TOPOLOGY)
 * @param writeback              1 writeback cache, 0 writethrough (CONFIG_WCE; writable through SET_CONFIG)
 * @param numQueues              request queues (MQ)
 * @param maxDiscardSectors      most sectors per DISCARD segment (DISCARD)
 * @param maxDiscardSeg          most segments per DISCARD request (DISCARD)
 * @param discardSectorAlignment DISCARD alignment in sectors (DISCARD)
 * @param maxWriteZeroesSectors  most sectors per WRITE_ZEROES segment (WRITE_ZEROES)
 * @param maxWriteZeroesSeg      most segments per WRITE_ZEROES request (WRITE_ZEROES)
 * @param writeZeroesMayUnmap    1 when WRITE_ZEROES with the unmap flag may deallocate (WRITE_ZEROES)
 */
public record BlkConfig(long capacity, int sizeMax, int segMax, int blkSize, int physicalBlockExp,
                        int alignmentOffset, int minIoSize, long optIoSize, int writeback, int numQueues,
                        long maxDiscardSectors, long maxDiscardSeg, long discardSectorAlignment,
                        long maxWriteZeroesSectors, long maxWriteZeroesSeg, int writeZeroesMayUnmap) {
    /** Bytes of {@code virtio_blk_config} in virtio 1.2 (through the zoned fields). */
    public static final int SIZE = 96;
    /**
     * Bytes a driver asks for with GET_CONFIG: through {@code write_zeroes_may_unmap} and its padding, virtio 1.1's
     * 60-byte struct. Not {@link #SIZE}: a back-end built on that older struct, such as qemu-storage-daemon, refuses a
     * longer read (it answers with an empty payload), and no field past these is used. Our device answers both
     * lengths alike (the first 60 bytes are the same).
     */
    public static final int READ_SIZE = 60;
    public static final int CAPACITY = 0;
    public static final int SIZE_MAX = 8;
    public static final int SEG_MAX = 12;
    public static final int BLK_SIZE = 20;
    public static final int PHYSICAL_BLOCK_EXP = 24;
    public static final int ALIGNMENT_OFFSET = 25;
    public static final int MIN_IO_SIZE = 26;
    public static final int OPT_IO_SIZE = 28;
    /** The one field a driver writes (CONFIG_WCE). */
    public static final int WRITEBACK = 32;
    public static final int NUM_QUEUES = 34;
    public static final int MAX_DISCARD_SECTORS = 36;
    public static final int MAX_DISCARD_SEG = 40;
    public static final int DISCARD_SECTOR_ALIGNMENT = 44;
    public static final int MAX_WRITE_ZEROES_SECTORS = 48;
    public static final int MAX_WRITE_ZEROES_SEG = 52;
    public static final int WRITE_ZEROES_MAY_UNMAP = 56;

    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(CAPACITY, capacity);
        b.putInt(SIZE_MAX, sizeMax);
        b.putInt(SEG_MAX, segMax);
        b.putInt(BLK_SIZE, blkSize);
        b.put(PHYSICAL_BLOCK_EXP, (byte) physicalBlockExp);
        b.put(ALIGNMENT_OFFSET, (byte) alignmentOffset);
        b.putShort(MIN_IO_SIZE, (short) minIoSize);
        b.putInt(OPT_IO_SIZE, (int) optIoSize);
        b.put(WRITEBACK, (byte) writeback);
        b.putShort(NUM_QUEUES, (short) numQueues);
        b.putInt(MAX_DISCARD_SECTORS, (int) maxDiscardSectors);
        b.putInt(MAX_DISCARD_SEG, (int) maxDiscardSeg);
        b.putInt(DISCARD_SECTOR_ALIGNMENT, (int) discardSectorAlignment);
        b.putInt(MAX_WRITE_ZEROES_SECTORS, (int) maxWriteZeroesSectors);
        b.putInt(MAX_WRITE_ZEROES_SEG, (int) maxWriteZeroesSeg);
        b.put(WRITE_ZEROES_MAY_UNMAP, (byte) writeZeroesMayUnmap);
        return b.array();
    }

    /**
     * Reads a configuration space of at least {@link #WRITE_ZEROES_MAY_UNMAP} + 1 bytes (a device's answer: trusted
     * no further than its length; the caller checks the values it relies on against the features).
     *
     * @throws IllegalArgumentException when {@code config} is too short
     */
    public static BlkConfig decode(byte[] config) {
        if (config.length <= WRITE_ZEROES_MAY_UNMAP) {
            throw new IllegalArgumentException("a virtio-blk configuration space of " + config.length
                    + " bytes; at least " + (WRITE_ZEROES_MAY_UNMAP + 1) + " needed");
        }
        ByteBuffer b = ByteBuffer.wrap(config).order(ByteOrder.LITTLE_ENDIAN);
        return new BlkConfig(b.getLong(CAPACITY), b.getInt(SIZE_MAX), b.getInt(SEG_MAX), b.getInt(BLK_SIZE),
                Byte.toUnsignedInt(b.get(PHYSICAL_BLOCK_EXP)), Byte.toUnsignedInt(b.get(ALIGNMENT_OFFSET)),
                Short.toUnsignedInt(b.getShort(MIN_IO_SIZE)), Integer.toUnsignedLong(b.getInt(OPT_IO_SIZE)),
                Byte.toUnsignedInt(b.get(WRITEBACK)), Short.toUnsignedInt(b.getShort(NUM_QUEUES)),
                Integer.toUnsignedLong(b.getInt(MAX_DISCARD_SECTORS)), Integer.toUnsignedLong(b.getInt(MAX_DISCARD_SEG)),
                Integer.toUnsignedLong(b.getInt(DISCARD_SECTOR_ALIGNMENT)),
                Integer.toUnsignedLong(b.getInt(MAX_WRITE_ZEROES_SECTORS)),
                Integer.toUnsignedLong(b.getInt(MAX_WRITE_ZEROES_SEG)), Byte.toUnsignedInt(b.get(WRITE_ZEROES_MAY_UNMAP)));
    }
}
