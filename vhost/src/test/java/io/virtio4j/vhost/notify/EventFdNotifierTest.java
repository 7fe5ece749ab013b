package io.virtio4j.vhost.notify;

import io.virtio4j.testkit.NoFdLeaks;

import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import io.virtio4j.os.EventFd;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EventFdNotifierTest {
    /** Long enough never to pass in a passing test; it only keeps a broken one from hanging. */
    private static final long NEVER = TimeUnit.MINUTES.toNanos(1);
    private static final int SIGNALS_PER_ROUND = 10_000;

    @Test
    void signalsBeforeAnAwaitCoalesceIntoOneWakeUp() throws InterruptedException {
        try (EventFdNotifier n = new EventFdNotifier()) {
            n.signal();
            n.signal();
            n.signal();
            assertTrue(n.await(NEVER));
            assertFalse(n.await(0), "the three signals were consumed as one");
        }
    }

    @Test
    void awaitWithoutASignalTimesOut() throws InterruptedException {
        try (EventFdNotifier n = new EventFdNotifier()) {
            assertFalse(n.await(TimeUnit.MILLISECONDS.toNanos(2)));
            assertFalse(n.await(0));
            assertFalse(n.await(-1));
        }
    }

    @Test
    void signalOnAnotherThreadWakesTheWaiter() throws InterruptedException {
        try (EventFdNotifier n = new EventFdNotifier()) {
            AtomicReference<Object> outcome = new AtomicReference<>();
            Thread waiter = Thread.ofPlatform().start(() -> {
                try {
                    outcome.set(n.await(NEVER));
                } catch (InterruptedException e) {
                    outcome.set(e);
                }
            });
            n.signal();
            waiter.join();
            assertEquals(Boolean.TRUE, outcome.get());
        }
    }

    @Test
    void interruptingAWaitingThreadEndsTheWait() throws InterruptedException {
        try (EventFdNotifier n = new EventFdNotifier()) {
            AtomicBoolean started = new AtomicBoolean();
            AtomicReference<Object> outcome = new AtomicReference<>();
            Thread waiter = Thread.ofPlatform().start(() -> {
                started.set(true);
                try {
                    outcome.set(n.await(NEVER));
                } catch (InterruptedException e) {
                    outcome.set(e);
                }
            });
            while (!started.get()) {
                Thread.onSpinWait();
            }
            waiter.interrupt();
            waiter.join();
            assertInstanceOf(InterruptedException.class, outcome.get());
        }
    }

    @Test
    void theEventFdCanBeSignalledDirectly() throws InterruptedException {
        try (EventFdNotifier n = new EventFdNotifier()) {
            n.eventFd().write(1); // what a peer process holding the same eventfd does
            assertTrue(n.await(NEVER));
        }
    }

    @Test
    void closingTheNotifierClosesItsEventFd() {
        EventFdNotifier n = new EventFdNotifier();
        n.close();
        assertFalse(n.eventFd().fileDescriptor().isOpen());
    }

    @Test
    void aBlockingEventFdIsRefused() {
        try (EventFd blocking = EventFd.create(EventFd.EFD_CLOEXEC)) {
            assertThrows(IllegalArgumentException.class, () -> new EventFdNotifier(blocking));
        }
    }

    @Test
    void signalAndAwaitAllocateNothingEvenBeforeTheyAreCompiled() throws InterruptedException {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (EventFdNotifier n = new EventFdNotifier()) {
            // No downcall of a signal or a wait captures errno unless it failed, so nothing allocates whether the
            // interpreter, C1 or C2 runs it (a queue thread waits uncompiled for seconds on a loaded machine). The
            // first round links the method handles; the second is measured, long before C2 could compile it
            // unless earlier tests in this JVM did (os' PollAllocationTest measures the waits in a C1-only JVM).
            long allocated = 0;
            for (int round = 0; round < 2; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < SIGNALS_PER_ROUND; i++) {
                    n.signal();
                    assertTrue(n.await(0));
                    assertFalse(n.await(0));
                }
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
            }
            // a per-call allocation is 40 bytes or more; under one byte per signal is the probe's own
            assertTrue(allocated < SIGNALS_PER_ROUND, allocated + " bytes over " + SIGNALS_PER_ROUND + " signals");
        }
    }
}
