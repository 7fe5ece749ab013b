package io.virtio4j.devices.blk.io;

import io.virtio4j.os.BlockFile;
import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.IoUring;
import io.virtio4j.os.IoVecs;

import java.lang.foreign.Arena;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Logger;

/**
 * The io_uring engine: each operation becomes one request on a ring of this engine's own (one per queue thread),
 * straight on guest memory; the kernel runs them concurrently and they finish in any order.
 *
 * <p>Operations: READ and WRITE are READV and WRITEV over the caller's iovecs; FLUSH is an fdatasync (FSYNC with
 * IORING_FSYNC_DATASYNC); DISCARD and WRITE_ZEROES_UNMAP punch a hole (FALLOC_FL_PUNCH_HOLE | KEEP_SIZE), WRITE_ZEROES
 * zeroes the range keeping it allocated (FALLOC_FL_ZERO_RANGE | KEEP_SIZE): {@link BlockFile#DISCARD_MODE} and
 * {@link BlockFile#ZERO_MODE}, as the synchronous engine. Where the file system has no such mode the result is
 * -EOPNOTSUPP, which {@link ZeroFallbackBlockIo} turns into the same answer for every engine. The user data of a
 * request is the slot (0 to depth - 1) that holds the operation's tag and progress.
 *
 * <p>A short read or write is continued, not failed: the kernel may move fewer bytes than asked (a signal, a
 * transfer split at a page-cache or device boundary, a file that grew meanwhile), and a guest's request is all or
 * nothing. The rest is submitted again from where the transfer stopped, through the caller's iovecs untouched: from
 * the next whole entry on, or, when it stopped inside an entry, first that entry's rest alone through a one-entry
 * iovec of the slot's own ({@link IoVecs.Cursor}, as the synchronous calls do). A step that moves nothing (a read
 * at the end of the file) ends the operation with -EIO, so that no request spins and none is reported done short.
 *
 * <p>{@link #completionFd()} is signalled by the kernel for every completion it posts (a registered eventfd). The
 * caller reads it (drains its counter) when it wakes for it and before it reaps, like a kick: a completion posted
 * after that read signals it again, so none is slept through.
 *
 * <p>At most {@code depth} operations are in flight, and the ring's completion queue holds twice its submission
 * queue, so completions never overflow it. The backing file's descriptor stays the caller's: the engine never
 * closes it, and it must stay open until {@link #close()} returns.
 */
public final class UringBlockIo implements BlockIo {
    private static final Logger LOG = Logger.getLogger(UringBlockIo.class.getName());
    private static final int FREE = -1;
    /** Tries of a submission the kernel refuses with nothing of ours running, before {@link #submit} leaves it. */
    private static final int IDLE_RETRIES = 16;
    /** How long {@link #close} waits before it submits again what the kernel would not take yet. */
    private static final long RESUBMIT_NANOS = 1_000_000;
    /** Takes the results {@link #close()} waits for and drops. */
    private static final Completion DROP = (tag, result) -> { };

    private final int fd;
    private final int depth;
    private final Arena arena;
    private final IoUring ring;
    private final EventFd completions;
    private final IoUring.CompletionHandler onCompletion = this::completed;

    // One slot per operation in flight, indexed by the request's user data.
    private final int[] tags;
    /** The operation, or {@link #FREE}. */
    private final int[] ops;
    /** File offset of the next byte to move (READ, WRITE), or of the range (the others). */
    private final long[] offsets;
    /** The operation's whole length: its result when it succeeds. */
    private final long[] lengths;
    /** Bytes still to move (READ, WRITE). */
    private final long[] remaining;
    /** Where the transfer stands in the caller's iovecs (READ, WRITE). */
    private final IoVecs.Cursor[] cursors;
    /** Per slot, one entry: the rest of an entry a transfer stopped inside. */
    private final IoVecs[] rests;
    private final int[] freeSlots;
    private int free;
    private int inFlight;

    // The reap in progress: where results go, how many were reported, whether a continuation was prepared.
    private Completion sink;
    private int reported;
    private boolean continued;
    private boolean closed;

    /**
     * An engine for the file open as {@code file} with room for {@code depth} operations in flight.
     *
     * @throws io.virtio4j.os.IoUringUnavailableException when this process may not use io_uring
     */
    public UringBlockIo(FileDescriptor file, int depth) {
        if (depth < 1 || depth > IoUring.MAX_ENTRIES) {
            throw new IllegalArgumentException("io_uring engine depth must be 1 to " + IoUring.MAX_ENTRIES + ", not "
                    + depth);
        }
        this.fd = file.fd();
        this.depth = depth;
        this.tags = new int[depth];
        this.ops = new int[depth];
        this.offsets = new long[depth];
        this.lengths = new long[depth];
        this.remaining = new long[depth];
        this.cursors = new IoVecs.Cursor[depth];
        this.rests = new IoVecs[depth];
        this.freeSlots = new int[depth];
        for (int i = 0; i < depth; i++) {
            ops[i] = FREE;
            freeSlots[i] = depth - 1 - i;
            cursors[i] = new IoVecs.Cursor();
        }
        this.free = depth;
        Arena a = Arena.ofShared();
        IoUring r = null;
        EventFd e = null;
        try {
            for (int i = 0; i < depth; i++) {
                rests[i] = IoVecs.allocate(a, 1);
            }
            r = IoUring.create(depth);
            e = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
            r.registerEventFd(e);
        } catch (RuntimeException | Error x) {
            if (e != null) {
                e.close();
            }
            if (r != null) {
                r.close();
            }
            a.close();
            throw x;
        }
        this.arena = a;
        this.ring = r;
        this.completions = e;
    }

    @Override
    public int depth() {
        return depth;
    }

    @Override
    public int inFlight() {
        return inFlight;
    }

    @Override
    public boolean queue(int tag, int op, long offset, long length, IoVecs iov, int iovIndex, int iovCount) {
        checkOpen();
        if (op < READ || op > WRITE_ZEROES_UNMAP) {
            throw new IllegalArgumentException("unknown block operation " + op);
        }
        if (offset < 0 || length < 0 || offset > Long.MAX_VALUE - length) {
            throw new IllegalArgumentException("block operation " + op + " range: " + length + " bytes at " + offset);
        }
        boolean transfer = op == READ || op == WRITE;
        if (transfer) {
            if (iov == null) {
                throw new IllegalArgumentException("block operation " + op + " needs iovecs");
            }
            if (iovIndex < 0 || iovCount < 0 || iovIndex > iov.capacity() - iovCount) {
                throw new IndexOutOfBoundsException("iovecs " + iovIndex + " to " + (iovIndex + iovCount - 1) + " of "
                        + iov.capacity());
            }
            long sum = iov.totalLength(iovIndex, iovCount);
            if (sum != length) {
                throw new IllegalArgumentException("block operation " + op + " of " + length + " bytes over iovecs of "
                        + sum);
            }
        }
        if (inFlight == depth) {
            return false;
        }
        int slot = freeSlots[--free];
        tags[slot] = tag;
        ops[slot] = op;
        offsets[slot] = offset;
        lengths[slot] = length;
        remaining[slot] = length;
        if (transfer) {
            cursors[slot].start(iov, iovIndex, iovCount);
        }
        inFlight++;
        prepare(slot);
        return true;
    }

    /** Prepares the request for what slot {@code slot} has still to do. */
    private void prepare(int slot) {
        boolean prepared = switch (ops[slot]) {
            case READ, WRITE -> prepareTransfer(slot);
            case FLUSH -> ring.prepareFsync(fd, IoUring.FSYNC_DATASYNC, slot);
            case WRITE_ZEROES -> ring.prepareFallocate(fd, BlockFile.ZERO_MODE, offsets[slot], lengths[slot], slot);
            default -> ring.prepareFallocate(fd, BlockFile.DISCARD_MODE, offsets[slot], lengths[slot], slot); // both unmapping ones
        };
        if (!prepared) {
            // Cannot happen: each operation in flight holds at most one entry and there are no more of them than
            // the ring has entries.
            throw new IllegalStateException("io_uring submission queue full with " + inFlight + " of " + depth
                    + " operations in flight");
        }
    }

    private boolean prepareTransfer(int slot) {
        IoVecs.Cursor c = cursors[slot];
        IoVecs v = c.array(rests[slot]); // stopped inside an entry: its rest first, alone
        return ops[slot] == READ
                ? ring.prepareReadv(fd, offsets[slot], v, c.index(), c.count(), slot)
                : ring.prepareWritev(fd, offsets[slot], v, c.index(), c.count(), slot);
    }

    /**
     * Hands the prepared requests to the kernel. When it takes none (EAGAIN: it lacks memory for one) and no request
     * of ours runs to give some back, it is tried again a few times, then the rest is left queued for the next
     * submit: the queue thread goes back to its loop (and its mailbox) and passes again at the latest after its
     * bounded sleep, rather than spinning here for as long as the shortage lasts.
     */
    @Override
    public void submit() {
        checkOpen();
        int idleTries = 0;
        while (ring.sqPending() > 0) {
            if (ring.submit() > 0) {
                idleTries = 0;
            } else if (!relieve(idleTries++)) {
                return;
            }
        }
    }

    /**
     * The kernel took no request just now. Requests of ours that finish give theirs back, so wait for one when any
     * is running; otherwise let other threads run and try again, {@link #IDLE_RETRIES} times; false: give up for now.
     */
    private boolean relieve(int idleTries) {
        int ready = ring.cqReady();
        if (running() - ready > 0) {
            ring.awaitCompletions(ready + 1);
            return true;
        }
        if (idleTries < IDLE_RETRIES) {
            Thread.yield();
            return true;
        }
        return false;
    }

    /** Operations in the kernel's hands: in flight and not waiting in the submission queue. */
    private int running() {
        return inFlight - ring.sqPending();
    }

    @Override
    public int reap(Completion sink) {
        checkOpen();
        if (this.sink != null) {
            throw new IllegalStateException("reap called from a completion it is reporting");
        }
        this.sink = sink;
        reported = 0;
        continued = false;
        try {
            ring.reap(onCompletion);
        } finally {
            this.sink = null;
        }
        if (continued) {
            submit();
        }
        return reported;
    }

    /** A request finished: the operation is done, failed, or (a short transfer) goes on. */
    private void completed(long userData, int result, int flags) {
        if (userData < 0 || userData >= depth || ops[(int) userData] == FREE) {
            throw new IllegalStateException("io_uring completion for slot " + userData + ", which has nothing in flight");
        }
        int slot = (int) userData;
        switch (ops[slot]) {
            case READ, WRITE -> transferred(slot, result);
            case FLUSH -> finish(slot, result < 0 ? result : 0);
            default -> finish(slot, result < 0 ? result : lengths[slot]);
        }
    }

    private void transferred(int slot, int result) {
        if (result < 0) {
            finish(slot, result);
            return;
        }
        long left = remaining[slot] - result;
        if (left == 0) {
            finish(slot, lengths[slot]);
        } else if (result == 0 || left < 0) {
            finish(slot, -Errno.EIO); // no progress (the end of the file), or more than asked: never done short
        } else {
            remaining[slot] = left;
            offsets[slot] += result;
            cursors[slot].advance(result); // within the run: fewer bytes than it holds were moved
            prepare(slot);
            continued = true;
        }
    }

    private void finish(int slot, long result) {
        int tag = tags[slot];
        ops[slot] = FREE;
        cursors[slot].clear(); // do not keep the caller's iovecs reachable
        freeSlots[free++] = slot;
        inFlight--;
        reported++;
        sink.completed(tag, result);
    }

    @Override
    public EventFd completionFd() {
        return completions;
    }

    /**
     * Submits what is queued, waits for every operation in flight to finish (the kernel writes guest memory until
     * then), drops their results, then frees the ring, the eventfd and the slots. Does not close the file.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        boolean idle = false;
        try {
            submit();
            while (inFlight > 0) {
                if (reap(DROP) == 0 && inFlight > 0 && ring.cqReady() == 0) {
                    if (running() > 0) {
                        ring.awaitCompletions(1);
                    } else {
                        // Every one still queued (the kernel took none yet): nothing would end the wait.
                        LockSupport.parkNanos(RESUBMIT_NANOS);
                        submit();
                    }
                }
            }
            idle = true;
        } finally {
            closed = true;
            if (idle) {
                try {
                    ring.close();
                } finally {
                    completions.close();
                    arena.close();
                }
            } else {
                // The wait failed with operations in flight: closing the ring would not stop them (the kernel goes
                // on reading and writing their buffers) and freeing the slots' iovecs would let it read freed
                // memory. Leak all of it instead, loudly.
                LOG.severe(this + ": closed with " + inFlight + " operations in flight; leaving the ring, its"
                        + " eventfd and its memory to them");
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("io_uring block engine (" + ring + ") is closed");
        }
    }

    @Override
    public String toString() {
        return "UringBlockIo(fd " + fd + ", depth " + depth + ", " + ring + ")";
    }
}
