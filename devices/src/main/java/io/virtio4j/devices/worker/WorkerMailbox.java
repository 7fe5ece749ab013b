package io.virtio4j.devices.worker;

import io.virtio4j.core.error.GuestMemoryFaultException;
import io.virtio4j.os.EventFd;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * How the control thread gets the worker to do something and waits until it is done: the request goes into a
 * queue, an eventfd in the worker's epoll set wakes the worker, which runs requests between passes. Every wait is
 * bounded: a dead worker fails requests at once ({@link WorkerDeadException}), a live one that does not take a
 * request in time has it withdrawn, one that takes it but does not finish it in time may still be running it
 * ({@link WorkerUnresponsiveException} either way). So the control thread never hangs on a worker. After an
 * unanswered request the mailbox is poisoned: every later request fails at once, and the worker, when it comes
 * back, stops (the runner checks {@link #poisoned()}).
 *
 * <p>A guest memory fault (the JVM's InternalError for a SIGBUS, see {@link GuestMemoryFaultException}) out of a
 * request is not a death: the worker lives on, so the request is answered as done once the fault handler (the
 * runner's: it breaks the thread's queues) has run. HotSpot raises that error late, at the next safepoint poll
 * after the faulting access, so it can surface after the device callback returned, anywhere in the rest of the
 * request; the runner's requests therefore do their own bookkeeping before any callback that touches guest memory.
 */
final class WorkerMailbox implements AutoCloseable {
    private record Mail(Runnable action, CompletableFuture<Void> done) {
    }

    private final ConcurrentLinkedQueue<Mail> mails = new ConcurrentLinkedQueue<>();
    private final EventFd wake = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
    private final String owner;
    private final long timeoutMillis;
    /** Worker thread: handles a guest memory fault out of a request; rethrows any other internal error. */
    private final Consumer<InternalError> onFault;
    private volatile Throwable death;
    /** The first request that went unanswered (control thread writes, once; both threads read), or null. */
    private volatile WorkerUnresponsiveException unresponsive;

    WorkerMailbox(String owner, long timeoutMillis, Consumer<InternalError> onFault) {
        this.owner = owner;
        this.timeoutMillis = timeoutMillis;
        this.onFault = onFault;
    }

    /** The eventfd to watch for readability in the worker's epoll set. */
    EventFd wakeFd() {
        return wake;
    }

    /**
     * Control thread: runs {@code action} on the worker and waits for it, at most twice the timeout (once for the
     * worker to take it, once more for the request itself when the worker took it just as the first wait ran
     * out). An interrupt does not cut the wait short (it is bounded anyway): it is kept and re-asserted on return,
     * so that a request the worker is running is never reported as not answered.
     *
     * @throws WorkerDeadException         when the worker is dead, or dies of the request
     * @throws WorkerUnresponsiveException when the worker did not answer in time, or did not earlier: the mailbox
     *                                     is poisoned from then on (see {@link #poisoned()})
     */
    void runOnWorker(Runnable action) {
        WorkerUnresponsiveException stuck = unresponsive;
        if (stuck != null) {
            throw new WorkerUnresponsiveException(owner + " stopped answering earlier and serves nothing more", stuck);
        }
        Mail mail = new Mail(action, new CompletableFuture<>());
        mails.add(mail);
        // The add (a volatile CAS) comes before this read of death, and the dying worker's write of death before
        // its failAll's polls: sequentially consistent, so either we see death here and fail the mail ourselves, or
        // failAll sees the mail. Completing a future twice is harmless.
        if (death != null) {
            failAll();
        } else {
            wake.write(1);
        }
        if (awaitDone(mail)) {
            return;
        }
        // The worker's poll and this remove both unlink the mail by a CAS on the same queue node, so exactly one
        // of them wins: either the request is withdrawn here and never runs, or the worker has it (and runs it).
        if (mails.remove(mail)) {
            throw poison(owner + " did not take a request within " + timeoutMillis + " ms: it was withdrawn");
        }
        if (!awaitDone(mail)) { // the worker took it just now: give the request itself the same time
            throw poison(owner + " took a request but did not finish it within " + timeoutMillis
                    + " ms: it may still be running");
        }
    }

    /**
     * Waits for the request, at most the timeout, not cut short by an interrupt; returns whether it was done.
     * An interrupt that came before or during the wait is re-asserted on return.
     */
    private boolean awaitDone(Mail mail) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    mail.done().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    return true;
                } catch (InterruptedException e) {
                    interrupted = true; // the throw cleared the flag: wait out the rest of the bounded time
                } catch (TimeoutException e) {
                    return false;
                } catch (ExecutionException e) {
                    throw unwrap(e);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Control thread: from now on every request fails at once, and the worker stops at its next look. */
    private WorkerUnresponsiveException poison(String why) {
        WorkerUnresponsiveException e = new WorkerUnresponsiveException(why, null);
        // A volatile write: the worker's next read of poisoned() sees it (it reads it between passes).
        unresponsive = e;
        return e;
    }

    /**
     * Whether a request went unanswered: the worker is stuck (or was), it may hold a request or queues it will
     * never be asked to give back, so it must stop touching anything that is not its own as soon as it looks.
     */
    boolean poisoned() {
        return unresponsive != null;
    }

    /** What the first unanswered request failed with, or null (see {@link #poisoned()}). */
    WorkerUnresponsiveException unanswered() {
        return unresponsive;
    }

    private WorkerDeadException unwrap(Exception e) {
        Throwable t = e.getCause();
        return t instanceof WorkerDeadException d ? d : new WorkerDeadException(owner, t);
    }

    /** Worker: runs every pending request; returns whether there was any. */
    boolean drain() {
        boolean any = false;
        Mail m;
        while ((m = mails.poll()) != null) {
            try {
                try {
                    m.action().run();
                } catch (InternalError e) {
                    if (!GuestMemoryFaultException.isGuestMemoryFault(e)) {
                        throw e;
                    }
                    // The worker lives on: its queues are broken (the handler), the request counts as done. The
                    // error may have surfaced only after the request's last step (see the class comment).
                    onFault.accept(e);
                }
                m.done().complete(null);
            } catch (Throwable t) {
                // The request failed on the worker thread: the worker is in an unknown state, so it dies too
                // (the runner's catch-all), and the caller hears why.
                m.done().completeExceptionally(new WorkerDeadException(owner, t));
                throw t;
            }
            any = true;
        }
        return any;
    }

    /** Worker, dying: every request from now on fails at once with {@code cause}. */
    void die(Throwable cause) {
        death = cause;
        failAll();
    }

    /** Whether the worker died, and of what (null while it lives). */
    Throwable death() {
        return death;
    }

    private void failAll() {
        Mail m;
        while ((m = mails.poll()) != null) {
            m.done().completeExceptionally(new WorkerDeadException(owner, death));
        }
    }

    /** Control thread: wakes the worker (to see a stop flag, say). */
    void wake() {
        wake.write(1);
    }

    /** Worker: clears the wake-up after epoll reported it. */
    void clearWake() {
        wake.tryRead();
    }

    @Override
    public void close() {
        wake.close();
    }
}
