package io.virtio4j.devices.blk;

import io.virtio4j.devices.blk.io.BlockIo;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;

/**
 * A real engine whose completions come back late and out of order, as an asynchronous engine's do: the operations
 * are performed by the wrapped engine, but each result is held for {@code holdReaps} reaps and the held ones are
 * handed over newest first. Proves that the device keeps slots straight when results cross.
 */
final class ReorderingBlockIo implements BlockIo {
    private final BlockIo inner;
    private final int holdReaps;
    private final int[] tag;
    private final long[] result;
    private final int[] age;
    private int held;

    ReorderingBlockIo(BlockIo inner, int holdReaps) {
        this.inner = inner;
        this.holdReaps = holdReaps;
        int d = inner.depth();
        tag = new int[d];
        result = new long[d];
        age = new int[d];
    }

    @Override
    public int depth() {
        return inner.depth();
    }

    @Override
    public int inFlight() {
        return inner.inFlight() + held;
    }

    @Override
    public boolean queue(int t, int op, long offset, long length, IoVecs iov, int iovIndex, int iovCount) {
        return inFlight() < depth() && inner.queue(t, op, offset, length, iov, iovIndex, iovCount);
    }

    @Override
    public void submit() {
        inner.submit();
    }

    @Override
    public int reap(Completion sink) {
        inner.reap((t, r) -> {
            tag[held] = t;
            result[held] = r;
            age[held] = 0;
            held++;
        });
        int n = 0;
        for (int i = held - 1; i >= 0; i--) { // newest first
            if (++age[i] > holdReaps) {
                sink.completed(tag[i], result[i]);
                n++;
                held--;
                tag[i] = tag[held];
                result[i] = result[held];
                age[i] = age[held];
            }
        }
        return n;
    }

    @Override
    public EventFd completionFd() {
        return null;
    }

    @Override
    public void close() {
        inner.close();
        held = 0;
    }
}
