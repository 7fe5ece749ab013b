package io.virtio4j.vhost.backend;

import io.virtio4j.vhost.protocol.ConfigPayload;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

/**
 * A virtio device served over vhost-user: what it offers (features, protocol features, queues, configuration
 * space) and what it does with started queues. The back-end's session knows no device type: everything
 * device-specific it answers comes from here.
 *
 * <p>Called from the connection's control thread. {@link #startQueue} hands a queue to the device, which then
 * processes it on threads of its own; {@link #stopQueue} must not return before the device has stopped touching
 * the queue (the back-end then replies to GET_VRING_BASE or unmaps memory).
 */
public interface VirtioDevice {
    /** Virtio feature bits offered (VERSION_1 at least); the back-end adds its vhost-user bits. */
    long features();

    /**
     * Protocol features of this device, offered on top of those the session implements for every device
     * ({@link ProtocolFeatures#SESSION}); only {@link ProtocolFeatures#DEVICE_DECLARABLE} bits may be declared.
     * By default MQ, which back-ends should always offer: GET_QUEUE_NUM answers {@link #reportedQueueCount()}.
     * A device with a configuration space for the front-end declares CONFIG too.
     */
    default long protocolFeatures() {
        return ProtocolFeatures.bit(ProtocolFeatures.MQ);
    }

    /** Number of virtqueues (rings) the device has: the front-end may set up rings 0 to this - 1. */
    int maxQueues();

    /**
     * The queue count GET_QUEUE_NUM reports: the virtqueues by default. A device whose front-ends count
     * something else says so (virtio-net: queue pairs, as QEMU and DPDK read the answer).
     */
    default int reportedQueueCount() {
        return maxQueues();
    }

    /** Queue size limit of the device (SET_VRING_NUM above it is refused). */
    default int maxQueueSize() {
        return 32768;
    }

    /** The device's configuration space, as GET_CONFIG reads it (little-endian fields, virtio 1.x). */
    byte[] config();

    /**
     * A SET_CONFIG write of {@code data} at {@code offset}: {@code flags} is {@link ConfigPayload#FLAG_WRITABLE}
     * for the driver writing a writable field, {@link ConfigPayload#FLAG_MIGRATION} for state restored during
     * migration. By default every field is read-only and there is no state to restore: driver writes are
     * refused, migration writes have nothing to do.
     *
     * @throws ConfigWriteRefusedException when the write touches a field that cannot be written this way
     */
    default void setConfig(long offset, byte[] data, long flags) throws ConfigWriteRefusedException {
        if (flags != ConfigPayload.FLAG_MIGRATION) {
            throw new ConfigWriteRefusedException(offset, data.length, "the device's configuration space is read-only");
        }
    }

    /** Called once features are negotiated (SET_FEATURES). */
    default void featuresNegotiated(long features) {
    }

    /**
     * Starts processing queue {@code index}.
     *
     * @throws QueueStartRefusedException when the device cannot serve the ring as the front-end set it up; the
     *         ring stays stopped and the front-end's request is refused
     * @throws io.virtio4j.os.LinuxException when a descriptor of the front-end's cannot be used (a kick eventfd
     *         epoll cannot watch): treated as a refusal, so the device must leave nothing of the ring started
     */
    void startQueue(int index, QueueContext queue) throws QueueStartRefusedException;

    /** Stops processing queue {@code index}; returns only when the device no longer touches it. */
    void stopQueue(int index);

    /** Queue {@code index} was enabled or disabled (SET_VRING_ENABLE) while started. */
    default void queueEnabled(int index, boolean enabled) {
    }

    /**
     * Returns the device's queues to their initial state (RESET_DEVICE, disconnect); no queue is started then. The
     * configuration the driver wrote stays (see {@link #resetConfig}).
     */
    default void reset() {
    }

    /**
     * The driver reset the device (RESET_DEVICE), after {@link #reset}: the configuration fields a driver writes go
     * back to their initial values. A connection that ends does not do this: a front-end that reconnects (QEMU)
     * does not write them again, and the guest's driver goes on by what it set (virtio-blk's {@code writeback}).
     */
    default void resetConfig() {
    }

    /**
     * The guest memory of a connection that ended is to be unmapped by {@code unmap} (called after {@link #reset}).
     * A device runs it only once none of its threads that held a queue may still touch that memory (a worker that
     * did not answer when its ring was taken back, or I/O it started): later, from another thread, or never (a
     * leak, logged, rather than data written into memory that is no longer the guest's). By default at once.
     */
    default void retire(Runnable unmap) {
        unmap.run();
    }
}
