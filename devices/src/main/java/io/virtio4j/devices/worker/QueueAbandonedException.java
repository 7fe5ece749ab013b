package io.virtio4j.devices.worker;

import io.virtio4j.core.error.RingViolationException;

/**
 * Why a queue is broken when the thread serving it died, or stopped answering: nothing will process the ring any more, so it is broken
 * like a ring the driver corrupted (every later call fails fast) until the front-end restarts it.
 */
public final class QueueAbandonedException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    QueueAbandonedException(int queue, String worker, Throwable cause) {
        super("queue", queue, "abandoned: " + worker + " serves it no more: " + cause);
        initCause(cause);
    }
}
