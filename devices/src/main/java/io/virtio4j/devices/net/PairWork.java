package io.virtio4j.devices.net;

import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.vhost.backend.QueueContext;

/**
 * The work of one receive/transmit queue pair, run by a {@link io.virtio4j.devices.worker.QueueRunner}: queue
 * {@code 2p} is the pair's receive queue, {@code 2p + 1} its transmit queue.
 */
sealed interface PairWork extends QueueWorker permits ReflectorWorker, TapBridgeWorker {
    /** The pair's counters, written by the runner's thread. */
    NetStats stats();

    /** Publishes the used elements pushed on {@code q} and notifies the driver if it asked; counts notifications. */
    default void flush(QueueContext q) {
        if (q != null && !q.queue().isBroken() && q.queue().flushUsed()) {
            stats().notifications++;
        }
    }
}
