package io.virtio4j.devices.worker;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mailbox never lets the control thread wait for ever, whatever the worker does. */
class WorkerMailboxTest {

    @Test
    void aDeadWorkerFailsRequestsAtOnceNamingWhyItDied() {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 60_000)) {
            Error cause = new Error("boom");
            m.die(cause);
            AtomicBoolean ran = new AtomicBoolean();
            WorkerDeadException e = assertThrows(WorkerDeadException.class, () -> m.runOnWorker(() -> ran.set(true)));
            assertSame(cause, e.getCause());
            assertFalse(m.drain(), "the failed request is not left for a drain");
            assertFalse(ran.get());
        }
    }

    @Test
    void aWorkerThatDiesWhileARequestWaitsFailsIt() throws Exception {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 60_000)) {
            CompletableFuture<Throwable> caller = CompletableFuture.supplyAsync(() -> {
                try {
                    m.runOnWorker(() -> { });
                    return null;
                } catch (WorkerException e) {
                    return e;
                }
            });
            while (!m.hasPending()) {
                Thread.onSpinWait();
            }
            m.die(new Error("boom"));
            assertTrue(caller.get(60, TimeUnit.SECONDS) instanceof WorkerDeadException);
        }
    }

    @Test
    void aRequestThatThrowsOnTheWorkerKillsItAndTheCallerHearsWhy() throws Exception {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 60_000)) {
            IllegalStateException bug = new IllegalStateException("bug");
            CompletableFuture<Throwable> caller = CompletableFuture.supplyAsync(() -> {
                try {
                    m.runOnWorker(() -> {
                        throw bug;
                    });
                    return null;
                } catch (WorkerException e) {
                    return e;
                }
            });
            while (!m.hasPending()) {
                Thread.onSpinWait();
            }
            assertSame(bug, assertThrows(IllegalStateException.class, m::drain), "the worker dies of it");
            Throwable got = caller.get(60, TimeUnit.SECONDS);
            assertTrue(got instanceof WorkerDeadException, String.valueOf(got));
            assertSame(bug, got.getCause());
        }
    }

    @Test
    void anUnresponsiveWorkerHasTheRequestWithdrawn() {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 1)) {
            AtomicBoolean ran = new AtomicBoolean();
            assertThrows(WorkerUnresponsiveException.class, () -> m.runOnWorker(() -> ran.set(true)));
            assertFalse(m.drain(), "a withdrawn request does not run later");
            assertFalse(ran.get());
        }
    }
}
