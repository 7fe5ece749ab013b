package io.virtio4j.vhost.backend;

/**
 * A virtio device served over vhost-user: what it offers and what it does with started queues.
 *
 * <p>Called from the connection's control thread. {@link #startQueue} hands a queue to the device, which then
 * processes it on threads of its own; {@link #stopQueue} must not return before the device has stopped touching
 * the queue (the back-end then replies to GET_VRING_BASE or unmaps memory).
 */
public interface VirtioDevice {
    /** Virtio feature bits offered (VERSION_1 at least); the back-end adds its vhost-user bits. */
    long features();

    /** Number of virtqueues the device supports (GET_QUEUE_NUM answers with this). */
    int maxQueues();

    /** Queue size limit of the device (SET_VRING_NUM above it is refused). */
    default int maxQueueSize() {
        return 32768;
    }

    /** The device's configuration space. */
    byte[] config();

    /** Called once features are negotiated (SET_FEATURES). */
    default void featuresNegotiated(long features) {
    }

    /** Starts processing queue {@code index}. */
    void startQueue(int index, QueueContext queue);

    /** Stops processing queue {@code index}; returns only when the device no longer touches it. */
    void stopQueue(int index);

    /** Queue {@code index} was enabled or disabled (SET_VRING_ENABLE) while started. */
    default void queueEnabled(int index, boolean enabled) {
    }

    /** Returns the device to its initial state (RESET_DEVICE, disconnect); no queue is started then. */
    default void reset() {
    }
}
