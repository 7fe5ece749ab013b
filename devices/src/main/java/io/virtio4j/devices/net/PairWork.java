package io.virtio4j.devices.net;

import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.vhost.backend.QueueContext;

/**
 * The work of one receive/transmit queue pair, run by a {@link io.virtio4j.devices.worker.QueueRunner}: queue
 * {@code 2p} is the pair's receive queue, {@code 2p + 1} its transmit queue.
 */
sealed interface PairWork extends QueueWorker permits ReflectorWorker, TapBridgeWorker {
    /** The pair's counters, written by the runner's thread. */
    NetStats stats();

    /**
     * Publishes the used elements pushed on {@code q} and notifies the driver if it asked; counts the notification, or
     * its suppression, on {@code q}'s direction (once per pass: a store to the shared counters is fine here).
     */
    default void flush(QueueContext q) {
        if (q == null || q.queue().isBroken()) {
            return;
        }
        int outcome = q.queue().flushUsedOutcome();
        if (outcome != DeviceQueue.FLUSH_NONE) {
            stats().add(q.index() % 2 == 0 ? NetStats.RX : NetStats.TX,
                    outcome == DeviceQueue.FLUSH_NOTIFIED ? NetStats.NOTIFICATIONS : NetStats.SUPPRESSED, 1);
        }
    }
}
