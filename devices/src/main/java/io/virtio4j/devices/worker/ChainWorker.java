package io.virtio4j.devices.worker;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.os.Epoll;
import io.virtio4j.vhost.backend.QueueContext;

import java.lang.foreign.Arena;
import java.util.logging.Logger;

/**
 * The worker of a queue whose buffers are answered at once, one by one (virtio-rng's requestq; any device without
 * I/O in flight): each buffer popped goes to the device's {@link Handler}, comes back used with the length the
 * handler wrote, and a pass publishes its buffers together. What every such device would otherwise write again:
 * the kick switch, a disabled ring, the pass's weight, a broken ring, the dirty log (migration: every byte the handler
 * wrote marked before the buffer goes back), statistics. Nothing allocated per buffer.
 */
public final class ChainWorker implements QueueWorker {
    private static final Logger LOG = Logger.getLogger(ChainWorker.class.getName());

    /** The device's part: what one buffer gets. Runs on the queue thread only. */
    public interface Handler {
        /** First call on the queue thread: allocate staging memory from {@code arena} (closed when it ends). */
        default void onStart(Arena arena) {
        }

        /**
         * Reads and writes {@code chain} (the driver's: hostile) and returns the bytes written into its writable part.
         *
         * @throws RingViolationException when the buffer breaks the device's rules: the queue breaks with it
         */
        long serve(DescriptorChain chain);
    }

    /** Buffers answered and bytes written into them, over a worker's life or added up. */
    public record Stats(long buffers, long bytes) {
        public static Stats zero() {
            return new Stats(0, 0);
        }

        /** This plus {@code other} (null: nothing). */
        public Stats plus(Stats other) {
            return other == null ? this : new Stats(buffers + other.buffers, bytes + other.bytes);
        }
    }

    private final String name;
    private final int weight;
    private final Handler handler;
    private final KickSwitch kick = new KickSwitch();
    private QueueContext queue;
    /** Written by the queue thread once per pass, read by the control thread. */
    private volatile long buffers;
    private volatile long bytes;

    /**
     * @param name    the queue in log lines, e.g. "rng requestq"
     * @param weight  buffers per pass at most, before the thread looks at its mailbox again (at least 1)
     * @param handler the device's part, made for this worker (it holds the queue thread's staging memory)
     */
    public ChainWorker(String name, int weight, Handler handler) {
        if (weight < 1) {
            throw new IllegalArgumentException("weight " + weight + ": a pass takes at least one buffer");
        }
        this.name = name;
        this.weight = weight;
        this.handler = handler;
    }

    public Stats stats() {
        return new Stats(buffers, bytes);
    }

    @Override
    public void onStart(Arena arena, Epoll epoll) {
        handler.onStart(arena);
    }

    @Override
    public void onAttach(QueueContext q) {
        queue = q;
        kick.attached(q);
    }

    /** Nothing to finish: every buffer a pass took was pushed and published in it. */
    @Override
    public void onDetach(QueueContext q) {
        queue = null;
        kick.reset();
    }

    @Override
    public int doWork() {
        // The enabled flag is volatile, written by the control thread (SET_VRING_ENABLE): read once per pass.
        QueueContext q = queue;
        if (q == null || !q.enabled() || q.queue().isBroken()) {
            return 0;
        }
        DeviceQueue dq = q.queue();
        // Held for the ring's life (logging switched on or off restarts the ring): null when not migrating.
        DirtyLog log = q.dirtyLog();
        int n = 0;
        long written = 0;
        try {
            for (DescriptorChain c; n < weight && (c = dq.pop()) != null; n++) {
                long len;
                try {
                    len = handler.serve(c);
                    if (log != null) {
                        // the bytes are in guest memory now and the buffer is not yet used: a migration that
                        // copies the page after reading the log sees them (a log too small to hold the page throws
                        // DirtyLogOverflowException, a RingViolationException: the queue breaks, as on rx and blk)
                        c.markWritten(log, q.memory(), len);
                    }
                } catch (RingViolationException e) {
                    dq.fail(e); // the device's rule (or the log's size) broke the ring, as one the queue checks would
                    throw e;
                }
                dq.pushUsed(c.head(), len);
                written += len;
            }
        } catch (VirtqueueException e) {
            LOG.warning(name + " broken: " + e.getMessage());
        }
        // Counted before the publication (single writer: one volatile write each per pass), so that a driver that
        // has its buffers back finds them counted.
        buffers += n;
        bytes += written;
        if (n > 0 && !dq.isBroken()) {
            dq.flushUsed();
        }
        return n;
    }

    /** A disabled ring is not armed: its buffers wait for the enable, seen after the runner's bounded sleep. */
    @Override
    public boolean prepareSleep() {
        return queue == null || !queue.enabled() || kick.arm(queue);
    }

    @Override
    public void onWake(int events) {
        kick.disarm(queue);
    }
}
