package io.virtio4j.devices.worker;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.devices.metrics.Counters;
import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.devices.metrics.QueueMetrics;
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

    /**
     * Buffers answered and bytes written into them, kicks read, and the used-buffer notifications sent and suppressed
     * (the driver asked for none), over a worker's life or added up.
     */
    public record Stats(long buffers, long bytes, long kicks, long notifications, long notificationsSuppressed) {
        public static Stats zero() {
            return new Stats(0, 0, 0, 0, 0);
        }

        /** This plus {@code other} (null: nothing). */
        public Stats plus(Stats other) {
            return other == null ? this : new Stats(buffers + other.buffers, bytes + other.bytes, kicks + other.kicks,
                    notifications + other.notifications, notificationsSuppressed + other.notificationsSuppressed);
        }

        /**
         * Adds the queue's samples to a scrape, labelled {@code device}, {@code queue} {@code index} and {@code direction}
         * {@code request} (as blk's requestq: the driver's requests, answered): the used buffers and the bytes they
         * report, and the families every device's queues have ({@link QueueMetrics}).
         */
        public void collect(PrometheusText out, String device, int index) {
            String[] labels = {"device", device, "queue", Integer.toString(index), "direction", "request"};
            out.counter(USED_BUFFERS, "Buffers taken from the queue and given back used.").sample(buffers, labels);
            out.counter(USED_BYTES, "Bytes the device wrote into those buffers (the sum of their used lengths).")
                    .sample(bytes, labels);
            QueueMetrics.notificationFamilies(out, 1, q -> kicks, q -> notifications, q -> notificationsSuppressed,
                    q -> labels);
        }
    }

    /** Metric family: buffers given back used ({@link Stats#collect}). */
    public static final String USED_BUFFERS = "virtio4j_used_buffers_total";
    /** Metric family: the bytes those buffers report written. */
    public static final String USED_BYTES = "virtio4j_used_bytes_total";

    private final String name;
    private final int weight;
    private final Handler handler;
    private final KickSwitch kick = new KickSwitch();
    private QueueContext queue;
    private static final int BUFFERS = 0;
    private static final int BYTES = 1;
    private static final int KICKS = 2;
    private static final int NOTIFICATIONS = 3;
    private static final int SUPPRESSED = 4;
    /** Added to by the queue thread (opaque stores, no fence), read by the control thread and a metrics scrape. */
    private final Counters counts = new Counters(5);

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
        return new Stats(counts.get(BUFFERS), counts.get(BYTES), counts.get(KICKS), counts.get(NOTIFICATIONS),
                counts.get(SUPPRESSED));
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
    public void onKick(QueueContext q) {
        counts.add(KICKS, 1);
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
        // Counted before the publication, so that a driver that has its buffers back finds them counted: the release
        // store of the publication orders these stores before it, and the driver's acquire of the used index the
        // reads it makes after. The notification decision is only known after the publication, and counted then.
        if (n > 0) {
            counts.add(BUFFERS, n);
            counts.add(BYTES, written);
        }
        if (n > 0 && !dq.isBroken()) {
            switch (dq.flushUsedOutcome()) {
                case DeviceQueue.FLUSH_NOTIFIED -> counts.add(NOTIFICATIONS, 1);
                case DeviceQueue.FLUSH_SUPPRESSED -> counts.add(SUPPRESSED, 1);
                default -> { }
            }
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
