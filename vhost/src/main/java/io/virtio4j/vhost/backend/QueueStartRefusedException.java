package io.virtio4j.vhost.backend;

/**
 * A device declines to start a ring the front-end set up (e.g. it was asked to poll a ring the device can only
 * sleep on). The ring stays stopped; the back-end answers the request that would have started it with a failure
 * (REPLY_ACK) or closes that connection, and keeps serving.
 */
public class QueueStartRefusedException extends Exception {
    private static final long serialVersionUID = 1L;

    private final int queue;

    public QueueStartRefusedException(int queue, String reason) {
        super("queue " + queue + ": " + reason);
        this.queue = queue;
    }

    /** The virtqueue index the device refused. */
    public int queue() {
        return queue;
    }
}
