package io.virtio4j.devices.blk.io;

import io.virtio4j.os.IoVecs;

/**
 * The engine of the null store: every operation succeeds at once and touches nothing. A read leaves the guest's
 * buffer as it was (QEMU's null-co without {@code read-zeroes}: the point is to measure the path, not the copy),
 * a write is dropped, flush, discard and write-zeroes succeed.
 */
public final class NullBlockIo extends InlineBlockIo {
    public NullBlockIo(int depth) {
        super(depth);
    }

    @Override
    long perform(int op, long offset, long length, IoVecs iov, int index, int count) {
        return op == FLUSH ? 0 : length;
    }
}
