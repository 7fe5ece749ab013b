package io.virtio4j.vhost.backend;

import io.virtio4j.core.notify.Notifier;

/**
 * The used-buffer notifier of one ring: writes to the ring's current call eventfd, which the front-end may
 * replace at any time (SET_VRING_CALL when it masks or unmasks interrupts), or does nothing when the
 * front-end polls (NOFD). A replaced eventfd is closed at once, safely under a signal
 * ({@link EventFdSlot}).
 */
public final class CallNotifier implements Notifier {
    private final EventFdSlot fd;

    CallNotifier(EventFdSlot fd) {
        this.fd = fd;
    }

    @Override
    public void signal() {
        fd.signal();
    }

    /** The device side never waits for its own calls. */
    @Override
    public boolean await(long timeoutNanos) {
        throw new UnsupportedOperationException("a call notifier is only signalled by the device");
    }
}
