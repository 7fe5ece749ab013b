package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;

/** A queue was to be waited on in a way the device's mode cannot honour; the queue is not started. */
public final class NotificationModeRejectedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int queue;
    private final NotificationMode mode;

    public NotificationModeRejectedException(int queue, NotificationMode mode, String reason) {
        super("queue " + queue + ": notification " + mode + " rejected: " + reason);
        this.queue = queue;
        this.mode = mode;
    }

    public int queue() {
        return queue;
    }

    public NotificationMode mode() {
        return mode;
    }
}
