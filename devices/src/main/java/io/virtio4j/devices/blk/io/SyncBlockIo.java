package io.virtio4j.devices.blk.io;

import io.virtio4j.os.BlockFile;
import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The synchronous engine: {@link #submit()} performs every queued operation on the calling thread, in order, with
 * preadv/pwritev straight on the guest's memory (looping on short transfers), fdatasync and fallocate. Many
 * operations may be queued per pass, so a queue thread still batches its used-ring publication; they just do not
 * overlap.
 *
 * <p>Discard punches a hole (FALLOC_FL_PUNCH_HOLE | KEEP_SIZE); a file system without holes makes it a successful
 * no-op (discard is a hint). Write-zeroes asks for FALLOC_FL_ZERO_RANGE, or a hole when the driver allows
 * unmapping; where the file system has neither, zeros are written (from one 64 KiB zero buffer), so the range
 * reads back as zeros whatever the file system.
 */
public final class SyncBlockIo implements BlockIo {
    private static final long ZERO_CHUNK = 64 * 1024;

    private final QueuedOps ops;
    private final BlockFile.Io io;
    private final Arena arena = Arena.ofShared();
    private MemorySegment zeros;
    private IoVecs zeroIov;

    public SyncBlockIo(BlockFile file, int depth) {
        this.ops = new QueuedOps(depth);
        this.io = file.io();
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
            ops.performed(i, perform(ops.op[i], ops.offset[i], ops.length[i], ops.iov[i], ops.iovIndex[i],
                    ops.iovCount[i]));
        }
    }

    private long perform(int op, long offset, long length, IoVecs iov, int index, int count) {
        return switch (op) {
            case READ -> io.preadv(iov, index, count, offset, length);
            case WRITE -> io.pwritev(iov, index, count, offset, length);
            case FLUSH -> io.fdatasync();
            case DISCARD -> {
                long r = io.fallocate(BlockFile.FALLOC_FL_PUNCH_HOLE | BlockFile.FALLOC_FL_KEEP_SIZE, offset, length);
                yield r == 0 || r == -Errno.EOPNOTSUPP ? length : r;
            }
            case WRITE_ZEROES_UNMAP -> {
                long r = io.fallocate(BlockFile.FALLOC_FL_PUNCH_HOLE | BlockFile.FALLOC_FL_KEEP_SIZE, offset, length);
                yield r == -Errno.EOPNOTSUPP ? zero(offset, length) : r == 0 ? length : r;
            }
            case WRITE_ZEROES -> zero(offset, length);
            default -> throw new IllegalStateException("operation " + op + " was queued"); // queue() refuses others
        };
    }

    /** ZERO_RANGE, or zeros written where the file system has no such operation. */
    private long zero(long offset, long length) {
        long r = io.fallocate(BlockFile.FALLOC_FL_ZERO_RANGE, offset, length);
        if (r == 0) {
            return length;
        }
        if (r != -Errno.EOPNOTSUPP) {
            return r;
        }
        if (zeros == null) {
            zeros = arena.allocate(ZERO_CHUNK, 4096); // zeroed by the arena; only ever read by the kernel
            zeroIov = IoVecs.allocate(arena, 1);
        }
        for (long done = 0; done < length; ) {
            long n = Math.min(ZERO_CHUNK, length - done);
            zeroIov.set(0, zeros, 0, n);
            long w = io.pwritev(zeroIov, 0, 1, offset + done, n);
            if (w < 0) {
                return w;
            }
            done += n;
        }
        return length;
    }

    @Override
    public int reap(Completion sink) {
        return ops.reap(sink);
    }

    /** Synchronous: nothing is ever in the kernel's hands between calls, so reap never has to be waited for. */
    @Override
    public EventFd completionFd() {
        return null;
    }

    @Override
    public void close() {
        ops.queued = 0; // queued but never submitted: dropped, as the contract says
        ops.reap((tag, result) -> { });
        arena.close();
    }
}
