package io.virtio4j.devices.net;

import io.virtio4j.devices.worker.QueueWorker;

/**
 * The work of one receive/transmit queue pair, run by a {@link io.virtio4j.devices.worker.QueueRunner}: queue
 * {@code 2p} is the pair's receive queue, {@code 2p + 1} its transmit queue.
 */
sealed interface PairWork extends QueueWorker permits ReflectorWorker, TapBridgeWorker {
    /** The pair's counters, written by the runner's thread. */
    NetStats stats();

    static boolean isReceive(int queueIndex) {
        return queueIndex % 2 == 0;
    }
}
