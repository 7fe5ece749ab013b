package io.virtio4j.devices.worker;

import io.virtio4j.os.EventFd;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * How the control thread gets the worker to do something and waits until it is done: the request goes into a
 * queue, an eventfd in the worker's epoll set wakes the worker, which runs requests between passes. Every wait is
 * bounded: a dead worker fails requests at once ({@link WorkerDeadException}), a live one that does not take a
 * request in time has it withdrawn ({@link WorkerUnresponsiveException}). So the control thread never hangs on
 * a worker.
 */
final class WorkerMailbox implements AutoCloseable {
    private record Mail(Runnable action, CompletableFuture<Void> done) {
    }

    private final ConcurrentLinkedQueue<Mail> mails = new ConcurrentLinkedQueue<>();
    private final EventFd wake = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
    private final String owner;
    private final long timeoutMillis;
    private volatile Throwable death;

    WorkerMailbox(String owner, long timeoutMillis) {
        this.owner = owner;
        this.timeoutMillis = timeoutMillis;
    }

    /** The eventfd to watch for readability in the worker's epoll set. */
    EventFd wakeFd() {
        return wake;
    }

    /** Control thread: runs {@code action} on the worker and waits for it. */
    void runOnWorker(Runnable action) {
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
        try {
            mail.done().get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (mails.remove(mail)) {
                throw new WorkerUnresponsiveException(owner, timeoutMillis);
            }
            awaitTaken(mail); // the worker took it just now: give the request itself the same time
        } catch (ExecutionException e) {
            throw unwrap(e);
        }
    }

    private void awaitTaken(Mail mail) {
        try {
            mail.done().get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw new WorkerUnresponsiveException(owner, timeoutMillis);
        } catch (ExecutionException e) {
            throw unwrap(e);
        }
    }

    private WorkerDeadException unwrap(Exception e) {
        Throwable t = e.getCause();
        return t instanceof WorkerDeadException d ? d : new WorkerDeadException(owner, t);
    }

    /** Whether a request waits to be taken (for tests). */
    boolean hasPending() {
        return !mails.isEmpty();
    }

    /** Worker: runs every pending request; returns whether there was any. */
    boolean drain() {
        boolean any = false;
        Mail m;
        while ((m = mails.poll()) != null) {
            try {
                m.action().run();
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
