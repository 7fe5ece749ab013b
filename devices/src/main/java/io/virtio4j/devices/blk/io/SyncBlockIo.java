package io.virtio4j.devices.blk.io;

import io.virtio4j.os.BlockFile;
import io.virtio4j.os.IoVecs;

/**
 * The synchronous engine: {@link #submit()} performs every queued operation on the calling thread, in order, with
 * preadv/pwritev straight on the guest's memory (looping on short transfers), fdatasync and fallocate
 * ({@link InlineBlockIo}).
 *
 * <p>DISCARD and WRITE_ZEROES_UNMAP punch a hole, WRITE_ZEROES zeroes the range keeping it allocated
 * ({@link BlockFile#DISCARD_MODE}, {@link BlockFile#ZERO_MODE}); where the file system has no such mode the result is
 * -EOPNOTSUPP, which {@link ZeroFallbackBlockIo} (the wrapper {@link BlockEngine#open} puts around every file engine)
 * turns into the same answer for every engine.
 */
public final class SyncBlockIo extends InlineBlockIo {
    private final BlockFile.Io io;

    public SyncBlockIo(BlockFile file, int depth) {
        super(depth);
        this.io = file.io();
    }

    @Override
    long perform(int op, long offset, long length, IoVecs iov, int index, int count) {
        return switch (op) {
            case READ -> io.preadv(iov, index, count, offset, length);
            case WRITE -> io.pwritev(iov, index, count, offset, length);
            case FLUSH -> io.fdatasync();
            case WRITE_ZEROES -> done(io.fallocate(BlockFile.ZERO_MODE, offset, length), length);
            case DISCARD, WRITE_ZEROES_UNMAP -> done(io.fallocate(BlockFile.DISCARD_MODE, offset, length), length);
            default -> throw new IllegalStateException("operation " + op + " was queued"); // queue() refuses others
        };
    }

    /** An fallocate's result as the operation's: its whole length, or the negative errno. */
    private static long done(long result, long length) {
        return result == 0 ? length : result;
    }
}
