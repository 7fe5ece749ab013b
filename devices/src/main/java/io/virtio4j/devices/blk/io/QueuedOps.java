package io.virtio4j.devices.blk.io;

import io.virtio4j.os.IoVecs;

/**
 * The bookkeeping of an engine that performs its operations on the calling thread ({@link SyncBlockIo},
 * {@link NullBlockIo}): operations queued and not yet performed, then results waiting to be reaped, in fixed arrays
 * of {@code depth} entries (nothing is allocated per operation).
 */
final class QueuedOps {
    final int depth;
    // queued, in order
    final int[] tag;
    final int[] op;
    final long[] offset;
    final long[] length;
    final IoVecs[] iov;
    final int[] iovIndex;
    final int[] iovCount;
    int queued;
    // performed, waiting for reap
    private final int[] doneTag;
    private final long[] doneResult;
    private int done;

    QueuedOps(int depth) {
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

    int inFlight() {
        return queued + done;
    }

    boolean queue(int t, int o, long off, long len, IoVecs v, int index, int count) {
        if (o < BlockIo.READ || o > BlockIo.WRITE_ZEROES_UNMAP) {
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

    /** Queued operation {@code i} was performed with {@code result}. */
    void performed(int i, long result) {
        doneTag[done] = tag[i];
        doneResult[done] = result;
        done++;
        iov[i] = null; // do not keep the caller's iovecs reachable
    }

    int reap(BlockIo.Completion sink) {
        // Copied out first: the sink may queue new operations (a write-through flush) while we hand these over.
        int n = done;
        done = 0;
        for (int i = 0; i < n; i++) {
            sink.completed(doneTag[i], doneResult[i]);
        }
        return n;
    }
}
