package io.virtio4j.devices.net;

import io.virtio4j.os.EventFd;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;

/**
 * How the control thread gets a queue-pair worker to do something (attach or detach a queue) and waits until
 * it is done: the action goes into a queue, an eventfd in the worker's epoll set wakes the worker, which runs
 * the actions between rounds. So the worker is the only thread that ever touches a started queue.
 */
final class WorkerMailbox implements AutoCloseable {
    private final ConcurrentLinkedQueue<Runnable> actions = new ConcurrentLinkedQueue<>();
    private final EventFd wake = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
    private final String owner;

    WorkerMailbox(String owner) {
        this.owner = owner;
    }

    /** The eventfd to watch for readability in the worker's epoll set. */
    EventFd wakeFd() {
        return wake;
    }

    /** Control thread: runs {@code action} on the worker and waits for it. */
    void runOnWorker(Runnable action) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        actions.add(() -> {
            try {
                action.run();
                done.complete(null);
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        wake.write(1);
        try {
            done.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + owner, e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(owner + " failed", e.getCause());
        }
    }

    /**
     * Control thread, after setting the worker's shutdown flag: wakes the worker so it sees the flag, waits up
     * to 5 s for it to end, then closes the wake-up eventfd.
     */
    void closeAfter(Thread worker) {
        wake.write(1);
        try {
            worker.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        close();
    }

    /** Worker: runs every pending action; returns whether there was any. */
    boolean drain() {
        boolean any = false;
        Runnable r;
        while ((r = actions.poll()) != null) {
            r.run();
            any = true;
        }
        return any;
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
