package io.virtio4j.vhost.backend;

import io.virtio4j.os.EventFd;

import java.util.List;
import java.util.function.Supplier;

/**
 * An eventfd of a ring that the front-end may replace while the device's threads signal it: the call eventfd
 * (SET_VRING_CALL, which QEMU sends on every interrupt mask and unmask, for the life of a VM) and the error eventfd
 * (SET_VRING_ERR). The control thread {@link #replace replaces} it; any thread {@link #signal signals} it.
 *
 * <p>Why a replaced eventfd can be closed at once. The slot keeps one descriptor number for as long as it has had
 * an eventfd, and a replacement does not swap numbers: it makes that number refer to the new eventfd
 * ({@code dup3}) and closes the number the new one came with. dup3 swaps the file behind the number in one step,
 * and a write already under way holds its own reference to the file it started on, so a signal racing with a
 * replacement writes to the old eventfd or the new one, and never to whatever the kernel would hand a closed
 * number to next. The replaced eventfd's last reference here goes with the swap: nothing waits for the device's
 * threads to move on, and nothing is kept until the ring stops. A signal costs its one write and no atomic
 * operation.
 *
 * <p>With none (NOFD), signals stop, but the number keeps the last eventfd until the next replacement or
 * {@link #empty}: closing it could race with a signal that read it just before. One descriptor, never more.
 *
 * <p>Why the number is not closed when the ring stops or the connection ends. A device thread that did not give
 * its ring back (a poisoned worker, stuck, that comes back in the middle of a pass) may have read {@link #current}
 * just before it went null and write to the number after: had the number been closed, the kernel could have handed
 * it on (the next front-end's guest-memory memfd, its socket) and those 8 bytes would land there. So the ring's
 * stop only {@link #empty empties} the slot: a private sink eventfd is dup3'd onto the number, which lets the
 * front-end's eventfd go at once and takes any late signal harmlessly; the number itself is closed only by
 * {@link #release}, through the device's retire path, once no such thread may still run.
 */
final class EventFdSlot {
    /** The eventfd signals write to, or null for none; when non-null, {@link #owned}. */
    private volatile EventFd current;
    /** The slot's number, and the eventfd it refers to now; null until the first eventfd. Control thread only. */
    private EventFd owned;

    /**
     * Writes 1 to the current eventfd, if there is one; any thread. A counter the front-end saturated (EAGAIN) is
     * left as it is: it is non-zero, so the front-end is notified already, and its own doing must not end the
     * device's thread.
     */
    void signal() {
        EventFd fd = current;
        if (fd != null) {
            fd.tryWrite(1);
        }
    }

    /**
     * Control thread: makes {@code next} (owned from now on and closed here unless it becomes the slot's number;
     * null for none) the eventfd signals write to; the one it replaces is closed with the swap.
     */
    void replace(EventFd next) {
        if (next == null) {
            current = null;
            return;
        }
        if (owned == null) {
            owned = next;
        } else {
            try (next) {
                next.fileDescriptor().duplicateOnto(owned.fileDescriptor());
            }
        }
        current = owned;
    }

    /**
     * Control thread, with the ring stopped ({@link VirtioDevice#stopQueue}): signals stop, the front-end's eventfd
     * is closed, and the number now refers to the {@code sink} (asked for only when there is a number; see the
     * class comment); a later {@link #replace} puts the next eventfd on the same number.
     */
    void empty(Supplier<EventFd> sink) {
        current = null;
        if (owned != null) {
            sink.get().fileDescriptor().duplicateOnto(owned.fileDescriptor());
        }
    }

    /**
     * Control thread, the connection gone, the slot {@link #empty emptied}: adds the slot's number to {@code
     * numbers}, to be closed once no device thread may signal it (the device's retire path); the slot is unused
     * from then on.
     */
    void release(List<EventFd> numbers) {
        current = null;
        if (owned != null) {
            numbers.add(owned);
            owned = null;
        }
    }

    /** Whether the slot holds a descriptor (its current eventfd or, with none, the last one); for tests. */
    boolean holdsDescriptor() {
        return owned != null;
    }
}
