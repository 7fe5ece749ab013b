package io.virtio4j.vhost.backend;

import io.virtio4j.os.EventFd;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A replaced eventfd is never closed under a signal that may be writing to it, and is closed once none can. */
class EventFdSlotTest {
    private static final Duration WATCHDOG = Duration.ofSeconds(30);
    /** The largest value an eventfd counter holds: one more and a blocking write waits for a read. */
    private static final long FULL = 0xFFFF_FFFF_FFFF_FFFEL;

    /** A blocking eventfd whose counter is full: a signal writing to it stays in flight until the test reads it. */
    private static EventFd full() {
        EventFd fd = EventFd.create(EventFd.EFD_CLOEXEC);
        fd.write(FULL);
        return fd;
    }

    @Test
    void aReplacedEventFdStaysOpenWhileASignalIsInFlightAndIsClosedAfter() throws Exception {
        try (EventFd old = full(); EventFd next = full()) {
            EventFdSlot slot = new EventFdSlot();
            slot.replace(old);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread signaller = new Thread(() -> {
                try {
                    slot.signal(); // blocks on whichever eventfd it read: both are full
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "signaller");
            signaller.setDaemon(true); // a failing run must not keep the JVM waiting on it
            signaller.start();
            assertTimeoutPreemptively(WATCHDOG, () -> {
                while (slot.signalling() == 0) {
                    Thread.onSpinWait();
                }
            });
            slot.replace(next);
            assertTrue(old.fileDescriptor().isOpen(), "the replaced eventfd was closed under a signal in flight");
            assertEquals(1, slot.retired());

            old.read(); // whichever it blocked on, the signal completes now
            next.read();
            assertTimeoutPreemptively(WATCHDOG, () -> signaller.join());
            assertNull(failure.get());
            assertEquals(0, slot.signalling());
            assertTrue(old.fileDescriptor().isOpen(), "closed by nobody until the control thread looks again");

            slot.closeRetired();
            assertFalse(old.fileDescriptor().isOpen(), "no signal in flight: the replaced eventfd goes");
            assertTrue(next.fileDescriptor().isOpen(), "the current eventfd stays");
            slot.close();
            assertFalse(next.fileDescriptor().isOpen());
        }
    }
}
