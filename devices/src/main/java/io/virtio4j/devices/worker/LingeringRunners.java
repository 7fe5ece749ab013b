package io.virtio4j.devices.worker;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;

/**
 * A device's queue runners that were closed but whose threads had not ended (a worker that did not answer, stuck
 * in a pass or waiting for its I/O): each may still read and write the guest memory of the queues it held, so the
 * memory a connection leaves behind is unmapped only once all of them have ended ({@link #retire}), or never.
 * Control path only (it takes a lock).
 */
public final class LingeringRunners {
    private static final Logger LOG = Logger.getLogger(LingeringRunners.class.getName());

    private final List<QueueRunner> runners = new ArrayList<>();

    /** Keeps {@code r}, closed by the caller, if its thread still runs. */
    public synchronized void add(QueueRunner r) {
        if (!r.ended()) {
            runners.add(r);
        }
    }

    /**
     * Runs {@code unmap} now when no kept runner still runs; otherwise once the last of them ends (on its thread),
     * and the memory stays mapped, leaked, as long as one does not.
     */
    public synchronized void retire(Runnable unmap) {
        runners.removeIf(QueueRunner::ended);
        if (runners.isEmpty()) {
            unmap.run();
            return;
        }
        LOG.severe(runners.size() + " queue thread(s) that did not stop may still touch the guest memory of the"
                + " connection that ended: it stays mapped until they end (leaked if they never do)");
        AtomicInteger left = new AtomicInteger(runners.size());
        Runnable last = () -> {
            if (left.decrementAndGet() == 0) {
                LOG.warning("the queue threads that did not stop have ended: unmapping the memory they held");
                unmap.run();
            }
        };
        for (QueueRunner r : List.copyOf(runners)) {
            r.whenEnded(last);
        }
    }
}
