package io.virtio4j.devices.blk.io;

import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;

/**
 * The engine of the null store: every operation succeeds at once and touches nothing. A read leaves the guest's
 * buffer as it was (QEMU's null-co without {@code read-zeroes}: the point is to measure the path, not the copy),
 * a write is dropped, flush, discard and write-zeroes succeed.
 */
public final class NullBlockIo implements BlockIo {
    private final QueuedOps ops;

    public NullBlockIo(int depth) {
        this.ops = new QueuedOps(depth);
    }

    @Override
    public int depth() {
        return ops.depth;
    }

    @Override
    public int inFlight() {
        return ops.inFlight();
    }

    @Override
    public boolean queue(int tag, int op, long offset, long length, IoVecs iov, int iovIndex, int iovCount) {
        return ops.queue(tag, op, offset, length, iov, iovIndex, iovCount);
    }

    @Override
    public void submit() {
        int n = ops.queued;
        ops.queued = 0;
        for (int i = 0; i < n; i++) {
            ops.performed(i, ops.op[i] == FLUSH ? 0 : ops.length[i]);
        }
    }

    @Override
    public int reap(Completion sink) {
        return ops.reap(sink);
    }

    @Override
    public EventFd completionFd() {
        return null;
    }

    @Override
    public void close() {
        submit(); // nothing to wait for: whatever was queued is done (and dropped)
        ops.reap((tag, result) -> { });
    }
}
