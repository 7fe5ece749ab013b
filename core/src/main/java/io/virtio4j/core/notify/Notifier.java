package io.virtio4j.core.notify;

/**
 * One direction of notification between driver and device: a doorbell with a sticky pending flag, like an
 * eventfd. The driver's kicks go through one, the device's used-buffer notifications through another.
 *
 * <p>Signals coalesce: many signals before an {@link #await} wake it once. Waking without a signal is
 * allowed (callers re-check the ring anyway), missing a signal is not: a signal sent before the waiter
 * starts waiting must make the next {@code await} return at once.
 */
public interface Notifier {
    /** Marks the doorbell pending and wakes the waiter if there is one. May be called from any thread. */
    void signal();

    /**
     * Waits until the doorbell is pending or {@code timeoutNanos} passes, then clears it. One waiter at a time.
     *
     * @return true when a signal was consumed, false on time-out
     * @throws InterruptedException when the waiting thread is interrupted
     */
    boolean await(long timeoutNanos) throws InterruptedException;
}
