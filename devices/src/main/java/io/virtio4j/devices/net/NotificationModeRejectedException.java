package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.vhost.backend.QueueStartRefusedException;

/** A queue was to be waited on in a way the device's mode cannot honour; the queue is not started. */
public final class NotificationModeRejectedException extends QueueStartRefusedException {
    private static final long serialVersionUID = 1L;

    private final NotificationMode mode;

    public NotificationModeRejectedException(int queue, NotificationMode mode, String reason) {
        super(queue, "notification " + mode + " rejected: " + reason);
        this.mode = mode;
    }

    public NotificationMode mode() {
        return mode;
    }
}
