package io.virtio4j.vhost.notify;

import io.virtio4j.core.notify.Notifier;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.Poll;

/**
 * A {@link Notifier} over an eventfd (the adapter lives here, above {@code os} and {@code core}, because the OS
 * bindings know no rings), so that the doorbell works across processes: the eventfd can be sent to
 * a vhost-user peer. The eventfd's counter is the sticky pending flag: signals add to it and coalesce, a
 * signal sent before {@link #await} starts is still in the counter when it looks.
 */
public final class EventFdNotifier implements Notifier, AutoCloseable {
    // Thread.interrupt() does not wake a thread blocked in a system call, so a long wait is cut into slices
    // with an interrupt check after each: an interrupted waiter notices within one slice.
    private static final long INTERRUPT_CHECK_NANOS = 50_000_000L;

    private final EventFd eventFd;
    private final Poll readable;

    /** A notifier over a new non-blocking, close-on-exec eventfd. */
    public EventFdNotifier() {
        this(EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC));
    }

    /**
     * A notifier over {@code eventFd}, which it then owns and closes.
     *
     * @throws IllegalArgumentException when the eventfd is blocking: after a wake-up a read must not block
     *         when another reader was faster
     */
    public EventFdNotifier(EventFd eventFd) {
        if (!eventFd.isNonBlocking()) {
            throw new IllegalArgumentException("EventFdNotifier needs an eventfd created with EFD_NONBLOCK: " + eventFd);
        }
        this.eventFd = eventFd;
        this.readable = new Poll(eventFd.fileDescriptor(), Poll.POLLIN);
    }

    public EventFd eventFd() {
        return eventFd;
    }

    /** Adds 1 to the eventfd's counter; allocates nothing. */
    @Override
    public void signal() {
        eventFd.write(1);
    }

    @Override
    public boolean await(long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            long left = Math.max(0, deadline - System.nanoTime());
            if ((readable.await(Math.min(left, INTERRUPT_CHECK_NANOS)) & Poll.POLLIN) != 0 && eventFd.tryRead() != 0) {
                return true;
            }
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            if (deadline - System.nanoTime() <= 0) {
                return false;
            }
        }
    }

    @Override
    public void close() {
        eventFd.close();
    }
}
