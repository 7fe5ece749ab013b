package io.virtio4j.devices.blk.io;

import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The one answer, whatever the engine, to a file system that lacks an fallocate mode (-EOPNOTSUPP: tmpfs has no
 * ZERO_RANGE; some file systems and devices have no holes): {@link BlockEngine#open} wraps every file engine in it,
 * so the guest sees the same results with {@code --io sync} and {@code --io io_uring} on the same file system.
 * <ul>
 *   <li>DISCARD the file system cannot do is a successful no-op: a discard is a hint (QEMU answers it the same way);</li>
 *   <li>WRITE_ZEROES and WRITE_ZEROES_UNMAP it cannot do become plain WRITEs of zeros through the same engine, so the
 *       range reads back as zeros on every file system (what the driver asked for).</li>
 * </ul>
 * Any other result, and every result of READ, WRITE and FLUSH, passes through unchanged.
 *
 * <p>The decision is taken per operation, from the engine's own answer, rather than by probing the file at open: a
 * probe would have to modify the file, and a block device's or a network file system's answer may depend on the
 * range. It costs one refused system call per write-zeroes on such a file system, which is cheap next to writing
 * the zeros.
 *
 * <p>The zeros come from one 64 KiB zero buffer that every write points at, through one iovec array built once and
 * never changed: {@link #ZERO_BIG} entries of 64 KiB followed by {@link #ZERO_SMALL} of 512 bytes, so that any
 * multiple of 512 bytes up to {@link #ZERO_STEP} is one contiguous run of entries (the last {@code n / 64 KiB} big ones
 * and the first {@code n % 64 KiB / 512} small ones). The kernel only reads those entries and the engines never
 * rewrite a caller's iovecs (they continue a short transfer through iovecs of their own), so the operations in
 * flight share them. A range longer than {@link #ZERO_STEP} is written in steps, one at a time per operation, at
 * most one step per operation per {@link #reap}.
 *
 * <p>Each operation holds a slot of this engine (the wrapped engine sees the slot as its tag), so at most
 * {@code depth} are in flight here and each holds at most one operation of the wrapped engine. Allocates nothing
 * per operation.
 */
final class ZeroFallbackBlockIo implements BlockIo {
    private static final long ZERO_CHUNK = 64 * 1024;
    private static final long ZERO_BLOCK = 512;
    static final int ZERO_SMALL = (int) (ZERO_CHUNK / ZERO_BLOCK) - 1;
    static final int ZERO_BIG = IoVecs.MAX_ENTRIES - ZERO_SMALL;
    /** The most zeros one write moves. */
    static final long ZERO_STEP = ZERO_BIG * ZERO_CHUNK;
    private static final int FREE = -1;

    private final BlockIo inner;
    private final int depth;
    private final Arena arena = Arena.ofShared();
    private final IoVecs zeroIov;

    private final int[] tags;
    /** The caller's operation, or {@link #FREE}. */
    private final int[] ops;
    private final long[] offsets;
    private final long[] lengths;
    /** Zeros written so far, or -1 while the operation is still the caller's own (not fallen back). */
    private final long[] zeroed;
    /** Length of the zero write in the wrapped engine's hands. */
    private final long[] step;
    private final int[] freeSlots;
    private int free;
    /** Slots whose next zero write is to be queued once the wrapped engine's reap returns. */
    private final int[] pending;
    private int pendingCount;

    private final Completion onInner = this::innerCompleted;
    private Completion sink;
    private int reported;

    ZeroFallbackBlockIo(BlockIo inner) {
        this.inner = inner;
        this.depth = inner.depth();
        tags = new int[depth];
        ops = new int[depth];
        offsets = new long[depth];
        lengths = new long[depth];
        zeroed = new long[depth];
        step = new long[depth];
        freeSlots = new int[depth];
        pending = new int[depth];
        for (int i = 0; i < depth; i++) {
            ops[i] = FREE;
            freeSlots[i] = depth - 1 - i;
        }
        free = depth;
        // Zeroed by the arena and only ever read by the kernel.
        MemorySegment zeros = arena.allocate(ZERO_CHUNK, 4096);
        zeroIov = IoVecs.allocate(arena, ZERO_BIG + ZERO_SMALL);
        for (int i = 0; i < ZERO_BIG; i++) {
            zeroIov.set(i, zeros, 0, ZERO_CHUNK);
        }
        for (int i = 0; i < ZERO_SMALL; i++) {
            zeroIov.set(ZERO_BIG + i, zeros, 0, ZERO_BLOCK);
        }
    }

    @Override
    public int depth() {
        return depth;
    }

    @Override
    public int inFlight() {
        return depth - free;
    }

    @Override
    public boolean queue(int tag, int op, long offset, long length, IoVecs iov, int iovIndex, int iovCount) {
        if (op < READ || op > WRITE_ZEROES_UNMAP) {
            throw new IllegalArgumentException("unknown block operation " + op);
        }
        if (free == 0) {
            return false;
        }
        int slot = freeSlots[free - 1];
        if (!inner.queue(slot, op, offset, length, iov, iovIndex, iovCount)) {
            // Cannot happen: the wrapped engine holds at most one operation per slot of ours.
            throw new IllegalStateException("wrapped engine full with " + free + " of " + depth + " slots free");
        }
        free--;
        tags[slot] = tag;
        ops[slot] = op;
        offsets[slot] = offset;
        lengths[slot] = length;
        zeroed[slot] = -1;
        return true;
    }

    @Override
    public void submit() {
        inner.submit();
    }

    @Override
    public int reap(Completion sink) {
        if (this.sink != null) {
            throw new IllegalStateException("reap called from a completion it is reporting");
        }
        this.sink = sink;
        reported = 0;
        try {
            inner.reap(onInner);
            if (pendingCount > 0) {
                // Queued only now, outside the wrapped engine's reap, and submitted at once. One step per reap, not
                // to the end: a synchronous engine writes the step here, and a GiB of zeros in one call would keep
                // the queue thread from its mailbox for seconds. The next reap takes the step's result; a
                // synchronous engine gives no wake-up for it, so its caller must pass again while operations are in
                // flight (BlkRequests does).
                for (int i = 0; i < pendingCount; i++) {
                    queueZeros(pending[i]);
                }
                pendingCount = 0;
                inner.submit();
            }
        } finally {
            this.sink = null;
        }
        return reported;
    }

    private void innerCompleted(int slot, long result) {
        if (slot < 0 || slot >= depth || ops[slot] == FREE) {
            throw new IllegalStateException("completion for slot " + slot + ", which has nothing in flight");
        }
        int op = ops[slot];
        if (zeroed[slot] >= 0) { // a step of zeros
            if (result < 0) {
                finish(slot, result);
                return;
            }
            zeroed[slot] += step[slot];
            if (zeroed[slot] == lengths[slot]) {
                finish(slot, lengths[slot]);
            } else {
                pending[pendingCount++] = slot;
            }
        } else if (result != -Errno.EOPNOTSUPP || op == READ || op == WRITE || op == FLUSH) {
            finish(slot, result);
        } else if (op == DISCARD) {
            finish(slot, lengths[slot]); // a hint the file system cannot take
        } else if (lengths[slot] % ZERO_BLOCK != 0) {
            finish(slot, -Errno.EINVAL); // not whole blocks: the zero iovecs cannot say it (the device never asks)
        } else { // WRITE_ZEROES(_UNMAP) without the fallocate mode: write the zeros
            zeroed[slot] = 0;
            pending[pendingCount++] = slot;
        }
    }

    /** Queues slot {@code slot}'s next write of zeros on the wrapped engine. */
    private void queueZeros(int slot) {
        long n = Math.min(ZERO_STEP, lengths[slot] - zeroed[slot]);
        int big = (int) (n / ZERO_CHUNK);
        int small = (int) (n % ZERO_CHUNK / ZERO_BLOCK); // lengths are whole blocks, multiples of 512
        step[slot] = n;
        if (!inner.queue(slot, WRITE, offsets[slot] + zeroed[slot], n, zeroIov, ZERO_BIG - big, big + small)) {
            throw new IllegalStateException("wrapped engine full with a slot of ours free"); // as in queue()
        }
    }

    private void finish(int slot, long result) {
        int tag = tags[slot];
        ops[slot] = FREE;
        freeSlots[free++] = slot;
        reported++;
        sink.completed(tag, result);
    }

    @Override
    public EventFd completionFd() {
        return inner.completionFd();
    }

    /** Closes the wrapped engine (it waits for what is in flight, the zero writes included), then the zeros. */
    @Override
    public void close() {
        try {
            inner.close();
        } finally {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return inner.toString();
    }
}
