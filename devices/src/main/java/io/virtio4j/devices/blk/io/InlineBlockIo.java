package io.virtio4j.devices.blk.io;

import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;

/**
 * An engine that performs its operations on the calling thread, in order, in {@link #submit()} ({@link SyncBlockIo},
 * {@link NullBlockIo}): operations queued and not yet performed, then results waiting to be reaped, in fixed arrays
 * of {@code depth} entries (nothing is allocated per operation). A subclass says only how one operation is
 * performed. Many operations may be queued per pass, so a queue thread still batches its used-ring publication; they
 * just do not overlap.
 */
abstract sealed class InlineBlockIo implements BlockIo permits SyncBlockIo, NullBlockIo {
    private final int depth;
    // queued, in order
    private final int[] tag;
    private final int[] op;
    private final long[] offset;
    private final long[] length;
    private final IoVecs[] iov;
    private final int[] iovIndex;
    private final int[] iovCount;
    private int queued;
    // performed, waiting for reap
    private final int[] doneTag;
    private final long[] doneResult;
    private int done;

    InlineBlockIo(int depth) {
        if (depth < 1) {
            throw new IllegalArgumentException("an engine's depth is at least 1, not " + depth);
        }
        this.depth = depth;
        tag = new int[depth];
        op = new int[depth];
        offset = new long[depth];
        length = new long[depth];
        iov = new IoVecs[depth];
        iovIndex = new int[depth];
        iovCount = new int[depth];
        doneTag = new int[depth];
        doneResult = new long[depth];
    }

    /**
     * Performs operation {@code op} ({@link #READ} ... {@link #WRITE_ZEROES_UNMAP}, checked by {@link #queue}) now;
     * returns its whole length (0 for FLUSH) or a negative errno.
     */
    abstract long perform(int op, long offset, long length, IoVecs iov, int index, int count);

    @Override
    public final int depth() {
        return depth;
    }

    @Override
    public final int inFlight() {
        return queued + done;
    }

    @Override
    public final boolean queue(int t, int o, long off, long len, IoVecs v, int index, int count) {
        if (o < READ || o > WRITE_ZEROES_UNMAP) {
            throw new IllegalArgumentException("unknown block operation " + o);
        }
        if (queued + done == depth) {
            return false;
        }
        tag[queued] = t;
        op[queued] = o;
        offset[queued] = off;
        length[queued] = len;
        iov[queued] = v;
        iovIndex[queued] = index;
        iovCount[queued] = count;
        queued++;
        return true;
    }

    @Override
    public final void submit() {
        int n = queued;
        queued = 0;
        for (int i = 0; i < n; i++) {
            doneTag[done] = tag[i];
            doneResult[done] = perform(op[i], offset[i], length[i], iov[i], iovIndex[i], iovCount[i]);
            done++;
            iov[i] = null; // do not keep the caller's iovecs reachable
        }
    }

    @Override
    public final int reap(Completion sink) {
        // Copied out first: the sink may queue new operations (a write-through flush) while we hand these over.
        int n = done;
        done = 0;
        for (int i = 0; i < n; i++) {
            sink.completed(doneTag[i], doneResult[i]);
        }
        return n;
    }

    /** Nothing is ever in the kernel's hands between calls, so reap never has to be waited for. */
    @Override
    public final EventFd completionFd() {
        return null;
    }

    /**
     * Nothing to wait for: operations queued but never submitted are dropped, as the contract says, and so are the
     * results not reaped.
     */
    @Override
    public void close() {
        for (int i = 0; i < queued; i++) {
            iov[i] = null;
        }
        queued = 0;
        done = 0;
    }
}
