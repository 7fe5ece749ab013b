package io.virtio4j.devices.worker;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.vhost.backend.QueueContext;

import java.util.function.Supplier;

/**
 * The one queue runner of a test device (every queue on one thread, NOTIFY), made with a fresh worker on the first
 * start after each reset: what a test device's startQueue, stopQueue and reset do with it.
 */
public final class OneRunner {
    private final String name;
    private final Supplier<? extends QueueWorker> newWorker;
    private QueueRunner runner;

    /** A runner whose thread is called {@code name}, with a worker from {@code newWorker} per connection. */
    public OneRunner(String name, Supplier<? extends QueueWorker> newWorker) {
        this.name = name;
        this.newWorker = newWorker;
    }

    /** startQueue: hands the queue to the runner, made first if there is none. */
    public synchronized void attach(QueueContext queue) {
        if (runner == null) {
            runner = new QueueRunner(name, -1, 0, newWorker.get());
        }
        runner.attach(queue, NotificationMode.NOTIFY);
    }

    /** stopQueue: takes queue {@code index} back, if there is a runner. */
    public synchronized void detach(int index) {
        if (runner != null) {
            runner.detach(index);
        }
    }

    /** reset: closes the runner; the next attach makes a new one. */
    public synchronized void close() {
        if (runner != null) {
            runner.close();
            runner = null;
        }
    }

    /** What killed the runner's thread, or null (also when there is no runner). */
    public synchronized Throwable failure() {
        return runner == null ? null : runner.failure();
    }
}
