package io.virtio4j.devices.net;

import io.virtio4j.vhost.backend.QueueContext;

/** The thread serving one receive/transmit queue pair; queues come and go through its mailbox. */
interface PairWorker {
    /** Hands a started queue to the worker; returns once the worker has it. */
    void attach(boolean receive, QueueContext q);

    /** Takes a queue away; returns only once the worker no longer touches it. */
    void detach(boolean receive);

    /** Stops the thread (bounded wait) and releases what the worker owns. */
    void shutdown();

    NetStats stats();

    /** The worker thread's id, for CPU time and allocation figures (ThreadMXBean). */
    long threadId();
}
