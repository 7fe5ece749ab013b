package io.virtio4j.devices.worker;

import io.virtio4j.devices.net.OnePairNetLookalike;
import io.virtio4j.core.error.GuestMemoryFaultException;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.Epoll;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.testkit.FlightRecording;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.backend.QueueContext;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The runner's own life: passes, a clean stop, a death (with queues over vhost-user: DeadWorkerTest), and a worker
 * that stops answering, with queues from a device that only records them (the test attaches them itself).
 */
class QueueRunnerTest {
    /** The runner's wait for a request in the unanswered-worker tests: the worker is stuck, so it always runs out. */
    private static final long SHORT_TIMEOUT_MILLIS = 100;

    @TempDir
    Path dir;

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

    /**
     * The runner says whether its thread is pinned, not only its log: a CPU the kernel refuses (1023, past any this
     * machine has) leaves an error naming the thread and the CPU, a CPU it may use (one it runs on) none.
     */
    @Test
    @Timeout(60)
    void theRunnerSaysWhetherItsThreadIsPinned() {
        int allowed = io.virtio4j.os.Affinity.allowedCpus()[0];
        for (int cpu : new int[] {1023, allowed}) {
            CountingWork w = new CountingWork(0);
            QueueRunner r = new QueueRunner("pin-runner", cpu, 0, w);
            try {
                // a pass runs after the pinning attempt: from then on its outcome is final
                while (w.passes.get() == 0) {
                    Thread.onSpinWait();
                }
                if (cpu == 1023) {
                    assertTrue(r.pinError() != null && r.pinError().startsWith("pin-runner not pinned to CPU 1023: "),
                            String.valueOf(r.pinError()));
                } else {
                    assertNull(r.pinError(), "CPU " + cpu);
                }
            } finally {
                r.close();
            }
        }
        QueueRunner unpinned = new QueueRunner("unpinned-runner", -1, 0, new CountingWork(0));
        try {
            assertNull(unpinned.pinError(), "not asked to pin: no error, even before its thread has run");
        } finally {
            unpinned.close();
        }
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

    /**
     * Keeps a segment of the runner's arena from onStart (as BlkRequests keeps its iovec arrays) and touches it in
     * onStop (as an engine finishing its I/O does); dies at the first pass when asked, and then holds onStop until
     * released.
     */
    private static final class ArenaWork implements QueueWorker {
        final CountDownLatch inStop = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicReference<Throwable> stopFailure = new AtomicReference<>();
        final AtomicInteger stops = new AtomicInteger();
        private final boolean die;
        private MemorySegment scratch;

        ArenaWork(boolean die) {
            this.die = die;
        }

        @Override
        public void onStart(Arena arena, Epoll epoll) {
            scratch = arena.allocate(64);
        }

        @Override
        public void onAttach(QueueContext q) {
        }

        @Override
        public void onDetach(QueueContext q) {
        }

        @Override
        public int doWork() {
            if (die) {
                throw new IllegalStateException("the pass dies, as the test wants");
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
            inStop.countDown();
            try {
                scratch.set(ValueLayout.JAVA_LONG, 0, 42); // throws IllegalStateException once the arena is closed
            } catch (Throwable t) {
                stopFailure.set(t);
            }
            if (die) {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** onStop still has the memory of onStart: the worker's I/O in flight may use it until onStop waited for it. */
    @Test
    @Timeout(60)
    void onStopRunsWhileTheArenaIsStillOpen() {
        ArenaWork w = new ArenaWork(false);
        QueueRunner r = new QueueRunner("test-runner", -1, 0, w);
        r.close();
        assertEquals(1, w.stops.get());
        assertNull(w.stopFailure.get());
        assertNull(r.failure());
    }

    /**
     * A death is reported (the control thread lets go: the connection goes on to reset the device and unmap guest
     * memory) only once onStop has returned, that is once the worker's I/O in flight has finished.
     */
    @Test
    @Timeout(60)
    void aDeathIsReportedOnlyOnceOnStopHasReturned() throws Exception {
        ArenaWork w = new ArenaWork(true);
        QueueRunner r = new QueueRunner("test-runner", -1, 0, w);
        try {
            w.inStop.await();
            assertNull(r.failure(), "death reported while onStop still runs");
            assertNull(w.stopFailure.get());
        } finally {
            w.release.countDown();
        }
        while (r.failure() == null) {
            Thread.onSpinWait();
        }
        assertInstanceOf(IllegalStateException.class, r.failure());
        r.close();
        assertEquals(1, w.stops.get());
    }

    /**
     * Memory retired while a closed runner's thread still runs (here stuck in onStop, as a worker waiting for its
     * I/O is) is unmapped only once that thread has ended, on it; retired after that, at once.
     */
    @Test
    @Timeout(60)
    void memoryIsRetiredOnlyOnceEveryLingeringThreadHasEnded() throws Exception {
        ArenaWork w = new ArenaWork(true);
        QueueRunner r = new QueueRunner("test-runner", -1, 0, w);
        LingeringRunners lingering = new LingeringRunners();
        CountDownLatch unmapped = new CountDownLatch(1);
        try {
            w.inStop.await();
            lingering.add(r);
            lingering.retire(unmapped::countDown);
            assertEquals(1, unmapped.getCount(), "unmapped while the thread still runs");
        } finally {
            w.release.countDown();
        }
        unmapped.await(); // the thread's last step
        assertTrue(r.ended());
        AtomicInteger later = new AtomicInteger();
        lingering.retire(later::incrementAndGet);
        assertEquals(1, later.get(), "nothing lingers any more: unmapped at once");
        r.close();
    }

    /** One queue pair that looks like a net device to the driver; it records its started queues and serves none. */
    private static final class RecordingDevice extends OnePairNetLookalike {
        final AtomicReferenceArray<QueueContext> started = new AtomicReferenceArray<>(2);

        @Override
        public void startQueue(int index, QueueContext queue) {
            started.set(index, queue);
        }

        @Override
        public void stopQueue(int index) {
        }
    }

    /**
     * A worker the test can get stuck: in a pass once {@code stallPass} is set, or in attaching queue 0 when
     * {@code stallAttach0} is; {@code stuck} opens when it is stuck, {@code release} lets it go on.
     */
    private static final class StallingWork implements QueueWorker {
        final AtomicInteger attaches0 = new AtomicInteger();
        final AtomicInteger attaches = new AtomicInteger();
        final CountDownLatch stuck = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        volatile boolean stallPass;
        volatile boolean stallAttach0;

        private void stall() {
            stuck.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void onAttach(QueueContext q) {
            attaches.incrementAndGet();
            if (q.index() == 0) {
                attaches0.incrementAndGet();
                if (stallAttach0) {
                    stall();
                }
            }
        }

        @Override
        public void onDetach(QueueContext q) {
        }

        @Override
        public int doWork() {
            if (stallPass) {
                stall();
            }
            return 0;
        }

        @Override
        public boolean prepareSleep() {
            return true;
        }
    }


    /**
     * A pass that does not end: the attach of the receive queue is withdrawn and fails, and the runner is poisoned
     * for good: the transmit queue it holds is reported lost (error eventfd) and, once the worker comes back,
     * broken by it; a later attach is broken at once and never reaches the worker, a detach returns at once.
     */
    @Test
    @Timeout(60)
    void aPassThatDoesNotEndPoisonsTheRunner() throws Exception {
        withQueues((g, rx, tx, err) -> {
            StallingWork w = new StallingWork();
            List<RecordedEvent> events;
            try (FlightRecording recording = FlightRecording.start()) {
                QueueRunner r = new QueueRunner("stalling-pass", -1, 0, w, SHORT_TIMEOUT_MILLIS);
                try {
                    r.attach(tx, NotificationMode.NOTIFY);
                    w.stallPass = true;
                    g.kickTx(0); // wakes the worker for a pass, which gets stuck
                    w.stuck.await();
                    assertThrows(WorkerUnresponsiveException.class, () -> r.attach(rx, NotificationMode.NOTIFY));
                    assertEquals(1, err.tryRead(), "the front-end hears its transmit ring is lost, once");
                    assertPoisoned(r, w, rx, 0);
                } finally {
                    w.release.countDown();
                    r.close();
                }
                events = recording.stop(dir.resolve("poison.jfr"));
            }
            assertInstanceOf(QueueAbandonedException.class, tx.queue().violation(), "broken by the worker on its way out");
            assertEquals(1, w.attaches.get());
            // One event per queue the front-end is told of, by whichever thread tells it: the control thread the two
            // the poison lost, then the attach it breaks at once; the worker's own breaking on its way out is silent.
            assertEquals(Stream.of(tx.index() + " " + WorkerUnresponsiveException.class.getName(),
                            rx.index() + " " + WorkerUnresponsiveException.class.getName(),
                            rx.index() + " " + QueueAbandonedException.class.getName()).sorted().toList(),
                    brokenBy(events, "stalling-pass").stream().sorted().toList());
        });
    }

    /** The QueueBroken events {@code runner} reported, each "queue exceptionType". */
    private static List<String> brokenBy(List<RecordedEvent> events, String runner) {
        return FlightRecording.named(events, "QueueBroken").stream().filter(e -> runner.equals(e.getString("runner")))
                .map(e -> e.getInt("queue") + " " + e.getString("exceptionType")).toList();
    }

    /**
     * A request the worker took but did not finish in time (its onAttach does not end): the attach fails, and when
     * the worker finishes it, it has set the queue up but serves nothing: it breaks what it holds and ends. Attaching
     * the same queue again does not reach the worker (no second set-up of one index).
     */
    @Test
    @Timeout(60)
    void aRequestTakenButNotFinishedInTimePoisonsTheRunner() throws Exception {
        withQueues((g, rx, tx, err) -> {
            StallingWork w = new StallingWork();
            // Long enough that the idle worker takes the request in the first wait; should it not (a starved
            // machine), the request is withdrawn instead and every assertion below holds all the same.
            QueueRunner r = new QueueRunner("stalling-attach", -1, 0, w, 1_000);
            try {
                r.attach(tx, NotificationMode.NOTIFY);
                w.stallAttach0 = true;
                assertThrows(WorkerUnresponsiveException.class, () -> r.attach(rx, NotificationMode.NOTIFY));
                assertPoisoned(r, w, rx, w.attaches0.get());
                assertTrue(w.attaches0.get() <= 1);
            } finally {
                w.release.countDown();
                r.close();
            }
            assertInstanceOf(QueueAbandonedException.class, tx.queue().violation(), "broken by the worker on its way out");
            assertTrue(w.attaches0.get() <= 1, "queue 0 set up at most once");
        });
    }

    /**
     * Touches a memfd mapping the test shrank (a real SIGBUS, the JVM's InternalError) in the calls it is told to:
     * a pass, an attach, the first {@code faultDetaches} detaches.
     */
    private static final class FaultingWork implements QueueWorker {
        final AtomicInteger detaches = new AtomicInteger();
        volatile boolean faultPass;
        volatile boolean faultAttach;
        volatile int faultDetaches;
        private final MemorySegment gone;
        long sink;

        FaultingWork(Arena arena) {
            try (FileDescriptor fd = Memfd.create("faulting-work", 4096)) {
                gone = Mmap.mapShared(fd, 0, 4096, arena);
                Memfd.truncate(fd, 0);
            }
        }

        private void touch() {
            sink += gone.get(ValueLayout.JAVA_BYTE, 0);
        }

        @Override
        public void onAttach(QueueContext q) {
            if (faultAttach) {
                touch();
            }
        }

        @Override
        public void onDetach(QueueContext q) {
            if (detaches.incrementAndGet() <= faultDetaches) {
                touch();
            }
        }

        @Override
        public int doWork() {
            if (faultPass) {
                faultPass = false;
                touch();
            }
            return 0;
        }

        @Override
        public boolean prepareSleep() {
            return true;
        }
    }

    /**
     * A guest memory fault in a pass, an attach or a detach breaks the thread's queues (GuestMemoryFaultException
     * naming each ring, error eventfd signalled) and the thread serves on: requests still run, a detach that faulted
     * is asked again (the worker must still wait for its I/O), and the runner never counts as dead.
     */
    @Test
    @Timeout(60)
    void aGuestMemoryFaultBreaksTheThreadsQueuesAndTheThreadServesOn() throws Exception {
        withQueues((g, rx, tx, err) -> {
            try (Arena arena = Arena.ofShared();
                 EventFd rxErr = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
                FaultingWork w = new FaultingWork(arena);
                QueueRunner r = new QueueRunner("faulting-work", -1, 0, w);
                FlightRecording recording = FlightRecording.start();
                try {
                    r.attach(tx, NotificationMode.NOTIFY);
                    w.faultPass = true;
                    g.kickTx(0); // wakes the worker for a pass, which faults
                    while (!tx.queue().isBroken()) {
                        Thread.onSpinWait(); // bounded by the test's timeout
                    }
                    GuestMemoryFaultException e = assertInstanceOf(GuestMemoryFaultException.class, tx.queue().violation());
                    assertEquals(tx.index(), e.value(), "names the ring");
                    assertNull(r.failure(), "a fault is not a death");

                    g.frontend().setVringErr(rx.index(), rxErr);
                    g.frontend().getFeatures(); // answered once SET_VRING_ERR is handled
                    w.faultAttach = true;
                    r.attach(rx, NotificationMode.NOTIFY); // answered: the attach completes, the queue broken
                    assertInstanceOf(GuestMemoryFaultException.class, rx.queue().violation());
                    w.faultDetaches = 1;
                    r.detach(tx.index());
                    assertEquals(2, w.detaches.get(), "the detach that faulted was asked again");
                    r.detach(rx.index()); // served: the thread lives on
                    assertNull(r.failure());
                    // Read after several requests, so after the passes that followed each break: signalled once.
                    assertEquals(1, err.tryRead(), "the front-end hears its ring broke, once");
                    assertEquals(1, rxErr.tryRead(), "the front-end hears its ring broke, once");
                    // and once as a JFR event each, naming why
                    List<RecordedEvent> events = recording.stop(dir.resolve("fault.jfr"));
                    assertEquals(Stream.of(tx.index(), rx.index()).sorted().map(i -> i + " "
                            + GuestMemoryFaultException.class.getName()).toList(),
                            brokenBy(events, "faulting-work").stream().sorted().toList());
                } finally {
                    recording.close();
                    r.close();
                }
            }
        });
    }

    /**
     * A detach whose onDetach faults again when asked again is asked until it returns (it must wait for its I/O), and
     * the thread's bookkeeping stays whole: the same ring attached and detached again later, and a pass after that
     * (run before the next request is answered), find the runner alive.
     */
    @Test
    @Timeout(60)
    void aDetachThatFaultsAgainIsAskedUntilItReturnsAndTheRunnerStaysWhole() throws Exception {
        withQueues((g, rx, tx, err) -> {
            try (Arena arena = Arena.ofShared()) {
                FaultingWork w = new FaultingWork(arena);
                QueueRunner r = new QueueRunner("faulting-detach", -1, 0, w);
                try {
                    r.attach(tx, NotificationMode.NOTIFY);
                    w.faultDetaches = 2;
                    r.detach(tx.index());
                    assertEquals(3, w.detaches.get(), "asked until a detach returned");
                    assertInstanceOf(GuestMemoryFaultException.class, tx.queue().violation());
                    assertEquals(1, err.tryRead(), "the front-end hears its ring broke");
                    r.attach(tx, NotificationMode.NOTIFY);
                    r.detach(tx.index());
                    r.attach(rx, NotificationMode.NOTIFY); // answered after the pass that follows the detach
                    assertNull(rx.queue().violation(), "attached to a live worker");
                    r.detach(rx.index());
                    assertNull(r.failure());
                    assertEquals(5, w.detaches.get());
                } finally {
                    r.close();
                }
            }
        });
    }

    /** After a poison: attaching {@code rx} again breaks it at once without the worker; detaching returns at once. */
    private static void assertPoisoned(QueueRunner r, StallingWork w, QueueContext rx, int rxAttaches) {
        r.attach(rx, NotificationMode.NOTIFY);
        assertInstanceOf(QueueAbandonedException.class, rx.queue().violation(), "a later attach is broken at once");
        assertEquals(rxAttaches, w.attaches0.get(), "a later attach does not reach the worker");
        r.detach(0);
        r.detach(1);
    }

    @FunctionalInterface
    private interface QueuesBody {
        void run(NetDriver g, QueueContext rx, QueueContext tx, EventFd txErr) throws Exception;
    }

    /** A driver connected in process to a {@link RecordingDevice}; {@code body} gets its two started queues. */
    private static void withQueues(QueuesBody body) throws Exception {
        RecordingDevice device = new RecordingDevice();
        InProcessBackend.Connected c = InProcessBackend.start(device, "queue-runner-test");
        try (NetDriver g = NetDriver.start(c.frontend(), NetDriver.Config.defaults());
             EventFd err = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
            g.frontend().setVringErr(1, err);
            g.frontend().getFeatures(); // answered once SET_VRING_ERR is handled
            body.run(g, device.started.get(0), device.started.get(1), err);
        } finally {
            c.backend().awaitEnd();
        }
    }
}
