package io.virtio4j.vhost.backend;

import io.virtio4j.core.notify.Notifier;
import io.virtio4j.os.EventFd;

/**
 * The used-buffer notifier of one ring: writes to the ring's current call eventfd, which the front-end may
 * replace at any time (SET_VRING_CALL when it masks or unmasks interrupts), or does nothing when the
 * front-end polls (NOFD).
 *
 * <p>Replaced eventfds are not closed here: the queue thread may be writing to one at that instant, and a
 * closed fd number can be reused by an unrelated open. The back-end closes them once the ring is stopped.
 */
public final class CallNotifier implements Notifier {
    private volatile EventFd target;

    void target(EventFd fd) {
        target = fd;
    }

    EventFd target() {
        return target;
    }

    @Override
    public void signal() {
        EventFd fd = target;
        if (fd != null) {
            fd.write(1);
        }
    }

    /** The device side never waits for its own calls. */
    @Override
    public boolean await(long timeoutNanos) {
        throw new UnsupportedOperationException("a call notifier is only signalled by the device");
    }
}
