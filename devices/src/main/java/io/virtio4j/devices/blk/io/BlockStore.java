package io.virtio4j.devices.blk.io;

import io.virtio4j.devices.blk.InvalidBlkOptionException;
import io.virtio4j.os.BlockFile;
import io.virtio4j.os.LinuxException;

/**
 * What a virtio-blk device stores its blocks in, shared by every queue thread: an opened file or block device, or
 * nothing at all (the null store of {@code --null SIZE}, whose engine completes everything at once). Each queue
 * thread opens an engine of its own over it ({@link BlockEngine#open}).
 *
 * <p>The size the guest sees is the backing size rounded down to whole logical blocks: a tail shorter than a block
 * cannot be addressed by a request that must be a multiple of the block size.
 */
public final class BlockStore implements AutoCloseable {
    /** Logical block sizes offered: what Linux and QEMU handle, and what O_DIRECT-free files need nothing for. */
    public static final int MIN_BLOCK = 512;
    public static final int MAX_BLOCK = 4096;

    private final BlockFile file;
    private final long size;
    private final boolean readOnly;
    private final int blockSize;
    private final String description;

    private BlockStore(BlockFile file, long size, boolean readOnly, int blockSize, String description) {
        this.file = file;
        this.size = size - size % blockSize;
        this.readOnly = readOnly;
        this.blockSize = blockSize;
        this.description = description;
    }

    /**
     * Opens the file or block device {@code path} (it must exist).
     *
     * @throws InvalidBlkOptionException naming {@code blockSize} or {@code file} (the file cannot be opened, or is
     *                                   shorter than one block)
     */
    public static BlockStore open(String path, boolean readOnly, int blockSize) {
        checkBlockSize(blockSize);
        BlockFile f;
        try {
            f = BlockFile.open(path, readOnly);
        } catch (LinuxException e) {
            throw new InvalidBlkOptionException("file", path, "cannot be opened: " + e.getMessage(), e);
        }
        try {
            long size = f.size();
            if (size < blockSize) {
                throw new InvalidBlkOptionException("file", path, "holds " + size + " bytes, less than one "
                        + blockSize + "-byte block");
            }
            return new BlockStore(f, size, readOnly, blockSize, f.toString());
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
    }

    /**
     * A store of {@code size} bytes that keeps nothing: reads leave the guest's buffers as they were (like QEMU's
     * null-co without read-zeroes: the point is to measure the path, not to copy), writes are discarded.
     *
     * @throws InvalidBlkOptionException naming {@code blockSize} or {@code size}
     */
    public static BlockStore ofNull(long size, boolean readOnly, int blockSize) {
        checkBlockSize(blockSize);
        if (size < blockSize) {
            throw new InvalidBlkOptionException("size", size, "must be at least one " + blockSize + "-byte block");
        }
        return new BlockStore(null, size, readOnly, blockSize, "null (" + size + " bytes)");
    }

    private static void checkBlockSize(int blockSize) {
        if (blockSize != MIN_BLOCK && blockSize != MAX_BLOCK) {
            throw new InvalidBlkOptionException("blockSize", blockSize, "must be 512 or 4096");
        }
    }

    /** The opened file, or null for the null store. */
    public BlockFile file() {
        return file;
    }

    public boolean isNull() {
        return file == null;
    }

    /** Bytes the guest sees: a whole number of blocks. */
    public long size() {
        return size;
    }

    public boolean readOnly() {
        return readOnly;
    }

    public int blockSize() {
        return blockSize;
    }

    @Override
    public void close() {
        if (file != null) {
            file.close();
        }
    }

    @Override
    public String toString() {
        return description;
    }
}
