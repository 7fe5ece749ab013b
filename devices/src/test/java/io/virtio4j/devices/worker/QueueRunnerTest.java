package io.virtio4j.devices.worker;

import io.virtio4j.vhost.backend.QueueContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The runner's own life, without queues: passes, a clean stop, a death. (With queues: DeadWorkerTest.) */
class QueueRunnerTest {

    /** Counts passes and sleeps; throws from the pass numbered {@code dieAt} (0: never). */
    private static final class CountingWork implements QueueWorker {
        final AtomicInteger passes = new AtomicInteger();
        final AtomicInteger stops = new AtomicInteger();
        private final int dieAt;

        CountingWork(int dieAt) {
            this.dieAt = dieAt;
        }

        @Override
        public void onAttach(QueueContext q) {
        }

        @Override
        public void onDetach(QueueContext q) {
        }

        @Override
        public int doWork() {
            if (passes.incrementAndGet() == dieAt) {
                throw new IllegalStateException("pass " + dieAt);
            }
            return 0;
        }

        @Override
        public boolean prepareSleep() {
            return true;
        }

        @Override
        public void onStop() {
            stops.incrementAndGet();
        }
    }

    @Test
    @Timeout(60)
    void aCleanStopRunsOnStopOnceAndLeavesNoFailure() {
        CountingWork w = new CountingWork(0);
        QueueRunner r = new QueueRunner("test-runner", -1, 0, w);
        while (w.passes.get() == 0) {
            Thread.onSpinWait();
        }
        r.close();
        assertNull(r.failure());
        assertEquals(1, w.stops.get());
    }

    @Test
    @Timeout(60)
    void aPassThatThrowsKillsTheRunnerAndCloseDoesNotWaitForIt() {
        CountingWork w = new CountingWork(1);
        QueueRunner r = new QueueRunner("test-runner", -1, 0, w);
        while (r.failure() == null) {
            Thread.onSpinWait();
        }
        assertInstanceOf(IllegalStateException.class, r.failure());
        r.close(); // joins a thread that has ended (the @Timeout would catch a wait for ever)
        assertEquals(1, w.passes.get(), "no pass after the death");
        assertEquals(1, w.stops.get());
    }
}
