package io.virtio4j.vhost.backend;

import io.virtio4j.os.EventFd;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An eventfd of a ring that the front-end may replace while the device's threads signal it: the call eventfd
 * (SET_VRING_CALL, which QEMU sends on every interrupt mask and unmask) and the error eventfd (SET_VRING_ERR).
 * The control thread {@link #replace replaces} it; any thread {@link #signal signals} it.
 *
 * <p>When a replaced eventfd is closed. Closing one that a signal is still writing to could make that write land
 * on whatever the kernel hands the number to next, so each signal counts itself in before it reads the current
 * eventfd and out after its write. The control thread installs the new eventfd and only then reads the count.
 * Both are volatile accesses, totally ordered: a signal that read the old eventfd counted itself in before that
 * read, which came before the installation, which came before the control thread's read of the count; so a count
 * of zero means that signal has counted itself out, after its write, and every signal still to come reads the new
 * eventfd. The replaced eventfds are then closed; with a signal in flight they wait for the next replacement or
 * for the ring to stop. Two atomic increments per signal, next to the write system call each signal makes.
 */
final class EventFdSlot {
    private volatile EventFd current;
    private final AtomicInteger signalling = new AtomicInteger();
    /** Replaced eventfds not closed yet; control thread only. */
    private final List<EventFd> retired = new ArrayList<>();

    /** Writes 1 to the current eventfd, if there is one; any thread. */
    void signal() {
        signalling.incrementAndGet();
        try {
            EventFd fd = current;
            if (fd != null) {
                fd.write(1);
            }
        } finally {
            signalling.decrementAndGet();
        }
    }

    /**
     * Control thread: makes {@code next} (owned from now on; null for none) the current eventfd; the one it
     * replaces is closed as soon as no signal can be writing to it.
     */
    void replace(EventFd next) {
        EventFd old = current;
        current = next;
        if (old != null) {
            retired.add(old);
        }
        closeRetired();
    }

    /** Control thread: closes the replaced eventfds unless a signal is in flight (see the class comment). */
    void closeRetired() {
        if (!retired.isEmpty() && signalling.get() == 0) {
            retired.forEach(EventFd::close);
            retired.clear();
        }
    }

    /**
     * Control thread, with the ring stopped (the device no longer signals, {@link VirtioDevice#stopQueue}): closes
     * the current eventfd and every replaced one.
     */
    void close() {
        replace(null);
        retired.forEach(EventFd::close);
        retired.clear();
    }

    /** Signals in flight now; for tests. */
    int signalling() {
        return signalling.get();
    }

    /** Replaced eventfds still open; for tests. */
    int retired() {
        return retired.size();
    }
}
