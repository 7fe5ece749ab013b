package io.virtio4j.devices.worker;

import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.stats.QueueCounters;

/**
 * The one way a device publishes a pass's used buffers and learns what became of the notification, for its counters:
 * sent, suppressed because the driver wanted none (EVENT_IDX or NO_INTERRUPT: our
 * {@code guest_notifications_suppressed}, not DPDK's meaning of that name, see {@code QueueMetrics}), or no decision (nothing new was
 * published). {@link DeviceQueue#flushUsed()} says only whether it notified; the queue's own {@link QueueCounters}
 * tell the other two apart, read on the thread that owns the queue (their only writer), so plain reads are right.
 */
public final class UsedFlush {
    /** Nothing was published since the last decision: no notification to send or suppress. */
    public static final int NONE = 0;
    /** The driver was notified. */
    public static final int NOTIFIED = 1;
    /** Used buffers were published and the driver asked not to be notified. */
    public static final int SUPPRESSED = 2;

    private UsedFlush() {
    }

    /** {@link DeviceQueue#flushUsed()}, on the queue's own thread: {@link #NONE}, {@link #NOTIFIED} or {@link #SUPPRESSED}. */
    public static int flush(DeviceQueue q) {
        QueueCounters c = q.counters();
        long suppressed = c.notificationsSuppressed;
        if (q.flushUsed()) {
            return NOTIFIED;
        }
        return c.notificationsSuppressed != suppressed ? SUPPRESSED : NONE;
    }
}
