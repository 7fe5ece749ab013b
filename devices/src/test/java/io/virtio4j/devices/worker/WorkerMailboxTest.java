package io.virtio4j.devices.worker;

import io.virtio4j.core.error.GuestMemoryFaultException;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mailbox never lets the control thread wait for ever, whatever the worker does. */
class WorkerMailboxTest {
    private static final long QUIET_MILLIS = 300;
    /** These tests raise no guest memory fault: one would end the worker like any other throwable. */
    private static final java.util.function.Consumer<InternalError> NO_FAULTS = e -> {
        throw e;
    };

    @Test
    void aDeadWorkerFailsRequestsAtOnceNamingWhyItDied() {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 60_000, NO_FAULTS)) {
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
        try (WorkerMailbox m = new WorkerMailbox("test worker", 60_000, NO_FAULTS)) {
            CompletableFuture<Throwable> caller = CompletableFuture.supplyAsync(() -> {
                try {
                    m.runOnWorker(() -> { });
                    return null;
                } catch (WorkerException e) {
                    return e;
                }
            });
            while (m.wakeFd().tryRead() == 0) { // the request is added before the worker is woken for it
                Thread.onSpinWait();
            }
            m.die(new Error("boom"));
            assertTrue(caller.get(60, TimeUnit.SECONDS) instanceof WorkerDeadException);
        }
    }

    @Test
    void aRequestThatThrowsOnTheWorkerKillsItAndTheCallerHearsWhy() throws Exception {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 60_000, NO_FAULTS)) {
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
            assertSame(bug, assertThrows(IllegalStateException.class, () -> {
                while (!m.drain()) { // until the request comes
                    Thread.onSpinWait();
                }
            }), "the worker dies of it");
            Throwable got = caller.get(60, TimeUnit.SECONDS);
            assertTrue(got instanceof WorkerDeadException, String.valueOf(got));
            assertSame(bug, got.getCause());
        }
    }

    /**
     * A guest memory fault out of a request (a real SIGBUS: a mapping whose memfd was shrunk) is not a death: the
     * fault handler gets it, the request is answered as done, and the mailbox serves on.
     */
    @Test
    void aGuestMemoryFaultOutOfARequestGoesToTheHandlerAndTheRequestIsDone() throws Exception {
        AtomicReference<InternalError> handled = new AtomicReference<>();
        try (Arena arena = Arena.ofShared();
             WorkerMailbox m = new WorkerMailbox("test worker", 60_000, handled::set)) {
            MemorySegment gone;
            try (FileDescriptor fd = Memfd.create("mailbox-fault", 4096)) {
                gone = Mmap.mapShared(fd, 0, 4096, arena);
                Memfd.truncate(fd, 0);
            }
            CompletableFuture<Void> caller = CompletableFuture.runAsync(
                    () -> m.runOnWorker(() -> gone.get(ValueLayout.JAVA_BYTE, 0)));
            while (!m.drain()) { // until the request comes; a throw here is the bug
                Thread.onSpinWait();
            }
            caller.get(60, TimeUnit.SECONDS); // answered as done, not as WorkerDeadException
            assertTrue(GuestMemoryFaultException.isGuestMemoryFault(handled.get()), String.valueOf(handled.get()));
            assertNull(m.death());
            CompletableFuture<Void> next = CompletableFuture.runAsync(() -> m.runOnWorker(() -> { }));
            while (!m.drain()) {
                Thread.onSpinWait();
            }
            next.get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void anUnresponsiveWorkerHasTheRequestWithdrawnAndEveryLaterOneFailsAtOnce() {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 1, NO_FAULTS)) {
            AtomicBoolean ran = new AtomicBoolean();
            assertThrows(WorkerUnresponsiveException.class, () -> m.runOnWorker(() -> ran.set(true)));
            assertTrue(m.poisoned(), "the worker is to stop when it comes back");
            assertFalse(m.drain(), "a withdrawn request does not run later");
            m.wakeFd().tryRead();
            WorkerUnresponsiveException later = assertThrows(WorkerUnresponsiveException.class,
                    () -> m.runOnWorker(() -> ran.set(true)));
            assertTrue(later.getCause() instanceof WorkerUnresponsiveException, "names the first: " + later);
            assertEquals(0, m.wakeFd().tryRead(), "a later request is not even posted");
            assertFalse(m.drain());
            assertFalse(ran.get());
        }
    }

    /**
     * An interrupt of the waiting control thread while the worker runs its request does not turn it into "did not
     * answer": the bounded wait goes on, the request's end is reported, and the interrupt is kept for the caller.
     */
    @Test
    void anInterruptDoesNotCutShortTheWaitForARequestTheWorkerRuns() throws Exception {
        try (WorkerMailbox m = new WorkerMailbox("test worker", 60_000, NO_FAULTS)) {
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Thread worker = new Thread(() -> {
                while (!m.drain()) {
                    Thread.onSpinWait();
                }
            }, "test-worker");
            worker.setDaemon(true);
            worker.start();
            AtomicReference<Throwable> outcome = new AtomicReference<>();
            AtomicBoolean interruptKept = new AtomicBoolean();
            Thread caller = new Thread(() -> {
                try {
                    m.runOnWorker(() -> {
                        entered.countDown();
                        awaitUninterruptibly(release);
                    });
                } catch (RuntimeException e) {
                    outcome.set(e);
                }
                interruptKept.set(Thread.currentThread().isInterrupted());
            }, "test-caller");
            caller.setDaemon(true);
            caller.start();
            assertTrue(entered.await(60, TimeUnit.SECONDS));
            caller.interrupt();
            // Give a caller that gives up on the interrupt time to do so before the request ends (this wait only
            // ever lets a broken mailbox pass, never fails a good one).
            caller.join(QUIET_MILLIS);
            release.countDown();
            caller.join(60_000);
            worker.join(60_000);
            assertFalse(caller.isAlive());
            assertNull(outcome.get(), "the request ran and was reported done");
            assertTrue(interruptKept.get(), "the interrupt is re-asserted for the caller");
            assertFalse(m.poisoned());
        }
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        while (true) {
            try {
                latch.await();
                return;
            } catch (InterruptedException e) {
                // the test's worker thread is not interrupted; go on waiting
            }
        }
    }
}
