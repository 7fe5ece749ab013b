package io.virtio4j.devices.worker;

import io.virtio4j.os.Epoll;
import io.virtio4j.vhost.backend.QueueContext;

import java.lang.foreign.Arena;

/**
 * The device's part of a queue thread: the work of one pass over its queues, and what to arm before the thread
 * sleeps. Everything here runs on the {@link QueueRunner}'s thread, the only thread that touches an attached
 * queue; the runner owns the thread, the epoll set, the kick eventfds, the mailbox and the idle policy.
 *
 * <p>A throwable out of any method kills the runner: its queues are broken and their error eventfds signalled,
 * and the control thread's requests fail fast with {@link WorkerDeadException}. A ring violation is not such a
 * throwable: the worker catches the {@link io.virtio4j.core.error.VirtqueueException} of the queue concerned and
 * goes on with its other queues.
 */
public interface QueueWorker {
    /**
     * First call on the thread: allocate staging memory from {@code arena} (confined to this thread, closed when
     * it ends) and register fds of the device's own in {@code epoll}, with tokens of at least
     * {@link QueueRunner#DEVICE_TOKENS} (events on them come to {@link #onEvent}).
     */
    default void onStart(Arena arena, Epoll epoll) {
    }

    /** A started queue is the worker's from now on; the runner already watches its kick eventfd. */
    void onAttach(QueueContext q);

    /** Stop touching {@code q} (publish what was pushed); the runner stops watching its kick afterwards. */
    void onDetach(QueueContext q);

    /** One pass: bounded work on every queue. Returns how much was done; 0 lets the runner idle. */
    int doWork();

    /**
     * The runner is about to sleep: ask for the notifications that should wake it (kicks on the queues the device
     * waits on, its own fds), re-checking each after arming. Returns false when work turned up meanwhile (the
     * runner then does another pass instead of sleeping).
     */
    boolean prepareSleep();

    /**
     * The sleep ended, {@code events} kicks and device fds having been ready (0: it timed out or only the mailbox
     * woke it); each was dispatched already. Take the notifications back.
     */
    default void onWake(int events) {
    }

    /** The guest kicked {@code q} (its eventfd was read). */
    default void onKick(QueueContext q) {
    }

    /** A registered fd of the device's own is ready. */
    default void onEvent(long token, int events) {
    }

    /**
     * Last call on the thread, after a stop or a death (its queues broken by then), with the arena of
     * {@link #onStart} still open: wait for every operation still in flight (the kernel may be reading or writing
     * guest memory and the arena's memory) and answer what can be answered. A death is reported to the control
     * thread only after it returns.
     */
    default void onStop() {
    }
}
