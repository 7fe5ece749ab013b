package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Reads several frames off a {@link FramePort} with one system call: up to {@link #capacity()} reads, each into a
 * buffer of its own, submitted together by one {@code io_uring_enter}. For a worker that drains a tap: each
 * wake-up costs one system call per batch instead of one per frame (and one more for the EAGAIN that ends the
 * drain). The copy out of the kernel stays one per frame, as with read(2).
 *
 * <h2>Why io_uring, of the ways to get several frames per system call</h2>
 * <ul>
 * <li><b>readv of several buffers</b> does not do it: a tap read takes one frame off the queue (tun_do_read
 *     dequeues one skb), and the buffers after it stay empty.</li>
 * <li><b>recvmmsg on an AF_PACKET socket bound to the tap</b> gets several frames per call, but as a second copy:
 *     the tap's own queue still fills with every frame (and drops once full) unless someone reads it too, so it is
 *     two deliveries of each frame, not a faster one; it also needs CAP_NET_RAW and a second descriptor to watch.</li>
 * <li><b>The vnet header's offloads</b> (TUNSETOFFLOAD with TUN_F_TSO*: one read hands over up to 64 KiB of
 *     coalesced segments) cut reads only for TCP flows the kernel coalesces, and only if the guest takes
 *     unsegmented frames (GUEST_TSO4/6 and GUEST_CSUM negotiated), which this device does not offer: it drops a
 *     frame with a gso_type. Nothing for UDP or small frames.</li>
 * <li><b>io_uring</b>, chosen: N READV entries in one enter, each a plain non-blocking read of one frame, made in
 *     submission order inside that system call. Each carries {@link IoUring#RWF_NOWAIT}: without it io_uring
 *     would park a read of an empty tap on the tap's wait queue and complete it whenever a frame came, out of the
 *     worker's control (and in the tap's wait queue, which the polling discipline empties on purpose). Works on any
 *     {@link FramePort} (a tap, a datagram socket) and reuses the ring the block engine uses.</li>
 * </ul>
 *
 * <h2>How many reads</h2>
 * A drain (the batches up to the one whose last read finds the port empty) starts with as many reads as the last
 * drain found frames, plus one: traffic comes in bursts of similar size, and the extra read is the one that finds
 * the port empty, the EAGAIN every drain ends with, made in the same system call instead of one of its own. Within a
 * drain, a batch whose last read still got a frame doubles the next one (more may wait), up to the capacity. At
 * least two reads: a wake-up means one frame, and the second read either gets another or ends the drain. Reads that
 * find the port empty are cheap (no copy, no wait) but not free, which is why the size follows the traffic rather
 * than staying at the capacity.
 *
 * <p>Where io_uring is unavailable (no kernel support, kernel.io_uring_disabled, a seccomp filter) the batch reads
 * with read(2), one system call per frame, until a read fails: the same results, in the same order.
 *
 * <p>One thread at a time. {@link #read} allocates nothing.
 */
public final class FrameReadBatch implements AutoCloseable {
    private final FramePort port;
    private final int capacity;
    private final long frameBytes;
    private final MemorySegment[] frames;
    /** Result of read i of the last batch: a frame's length, or a negated errno. */
    private final long[] results;
    /** Null: read(2) per frame. */
    private final IoUring ring;
    private final IoVecs iov;
    private final IoUring.CompletionHandler onCompletion;
    /** Reads the next batch asks for (see the class comment). */
    private int size = 2;
    /** Reads made by the last batch: their results are valid. */
    private int made;
    /** Frames found by the batches of the drain under way. */
    private int drainFrames;
    /** System calls the last batch made. */
    private int calls;

    private FrameReadBatch(FramePort port, int capacity, long frameBytes, Arena arena, IoUring ring) {
        this.port = port;
        this.capacity = capacity;
        this.frameBytes = frameBytes;
        this.frames = new MemorySegment[capacity];
        this.results = new long[capacity];
        this.ring = ring;
        this.iov = IoVecs.allocate(arena, capacity);
        for (int i = 0; i < capacity; i++) {
            frames[i] = arena.allocate(frameBytes, 64);
            iov.set(i, frames[i], 0, frameBytes);
        }
        // Built once: reaping hands each result to this object, capturing nothing per call.
        this.onCompletion = (userData, result, flags) -> {
            if (userData >= 0 && userData < made) {
                results[(int) userData] = result;
            }
        };
    }

    /**
     * A batch of up to {@code capacity} reads of {@code frameBytes} each from {@code port}, its buffers allocated in
     * {@code arena} (which must outlive it), with io_uring where the kernel allows it.
     *
     * @param useRing false: read(2) per frame even where io_uring is available (to compare, and to test both)
     */
    public static FrameReadBatch create(FramePort port, int capacity, long frameBytes, Arena arena, boolean useRing) {
        if (capacity < 2 || capacity > IoVecs.MAX_ENTRIES) {
            throw new IllegalArgumentException("a frame batch holds 2 to " + IoVecs.MAX_ENTRIES + " frames, not "
                    + capacity);
        }
        if (frameBytes < 1 || frameBytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("frame buffer of " + frameBytes + " bytes");
        }
        IoUring ring = null;
        if (useRing) {
            try {
                ring = IoUring.create(capacity);
            } catch (IoUringUnavailableException e) {
                ring = null; // read(2) per frame: batched() says so
            }
        }
        try {
            return new FrameReadBatch(port, capacity, frameBytes, arena, ring);
        } catch (RuntimeException | Error e) {
            if (ring != null) {
                ring.close();
            }
            throw e;
        }
    }

    /** Whether reads go through io_uring, several per system call; false: read(2) per frame. */
    public boolean batched() {
        return ring != null;
    }

    /** System calls the last {@link #read} made: io_uring_enter calls (one, but for a retry), or read(2) calls. */
    public int systemCalls() {
        return calls;
    }

    /** The most reads one batch makes. */
    public int capacity() {
        return capacity;
    }

    /** Bytes of each frame buffer: a longer frame reads as longer than this (see {@link #length}). */
    public long frameBytes() {
        return frameBytes;
    }

    /**
     * Reads a batch of at most {@code max} frames (1 to {@link #capacity()}). Results from an earlier batch are gone
     * (the buffers are reused): take every frame of a batch before the next.
     *
     * @return how many reads were made: the results {@link #length}(0) to {@code length(n - 1)}, in the order the
     *         frames left the port; a read that found nothing is {@code -Errno.EAGAIN} (and a frame may still
     *         follow it: it arrived in between)
     */
    public int read(int max) {
        if (max < 1 || max > capacity) {
            throw new IllegalArgumentException("read 1 to " + capacity + " frames, not " + max);
        }
        int n = Math.min(size, max);
        drainFrames += ring == null ? readEach(n) : readRing(n);
        if (results[made - 1] >= 0) {
            size = Math.min(2 * made, capacity); // the port may hold more: a larger batch
        } else {
            // Drained: the next drain starts at the size of this one, plus the read that finds the port empty.
            size = Math.max(2, Math.min(drainFrames + 1, capacity));
            drainFrames = 0;
        }
        return made;
    }

    /**
     * The result of read {@code i} of the last batch: the frame's length (header included), or a negated errno. A
     * length over {@link #frameBytes()} means the frame was cut to the buffer (the kernel reports a tap frame's full
     * length).
     */
    public long length(int i) {
        if (i < 0 || i >= made) {
            throw new IndexOutOfBoundsException("read " + i + " of a batch of " + made);
        }
        return results[i];
    }

    /** The buffer read {@code i} of the last batch filled. */
    public MemorySegment frame(int i) {
        if (i < 0 || i >= made) {
            throw new IndexOutOfBoundsException("read " + i + " of a batch of " + made);
        }
        return frames[i];
    }

    private int readEach(int n) {
        int got = 0;
        made = 0;
        calls = 0;
        while (made < n) {
            calls++;
            long r = port.read(frames[made], frameBytes);
            results[made++] = r;
            if (r < 0) {
                break; // empty (or failed): the reads after it would find the same
            }
            got++;
        }
        return got;
    }

    private int readRing(int n) {
        int fd = port.fileDescriptor().fd();
        made = n;
        for (int i = 0; i < n; i++) {
            // Offset 0: a tap and a socket have no file position; the kernel ignores it for them.
            if (!ring.prepareReadv(fd, 0, iov, i, 1, IoUring.RWF_NOWAIT, i)) {
                throw new IllegalStateException("io_uring of " + ring.sqEntries() + " entries full at read " + i
                        + " of " + n + ": a batch always reaps all it submitted");
            }
        }
        int done = 0;
        calls = 0;
        while (done < n) {
            calls++;
            // RWF_NOWAIT reads complete inside the enter, so the wait returns at once; it is there so that a read
            // the kernel did not start at once (EAGAIN or EBUSY from enter: retried) is still waited for.
            ring.submitAndWait(n - done);
            done += ring.reap(onCompletion);
        }
        int got = 0;
        for (int i = 0; i < n; i++) {
            if (results[i] >= 0) {
                got++;
            }
        }
        return got;
    }

    /** Closes the ring (nothing is in flight between batches); the buffers belong to the arena. */
    @Override
    public void close() {
        if (ring != null) {
            ring.close();
        }
    }

    @Override
    public String toString() {
        return "frame batch of " + capacity + " on " + port.name() + (ring == null ? " (read per frame)" : " (io_uring)");
    }
}
