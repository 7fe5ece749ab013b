package io.virtio4j.vhost.backend;

import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.testkit.OpenFds;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replaced eventfd is closed at once, also while a signal is writing to it, and the signal still lands on an
 * eventfd of the ring's (the old one or the new one), never on a closed number; however often the front-end
 * replaces it, the slot holds one descriptor.
 */
class EventFdSlotTest {
    private static final Duration WATCHDOG = Duration.ofSeconds(30);
    /** The largest value an eventfd counter holds: one more and a blocking write waits for a read. */
    private static final long FULL = 0xFFFF_FFFF_FFFF_FFFEL;
    private static final String EVENTFD = "anon_inode:[eventfd]";

    private static long eventFds() {
        return OpenFds.snapshot().values().stream().filter(EVENTFD::equals).count();
    }

    /**
     * A signal blocked writing to the slot's eventfd (a blocking eventfd whose counter is full) while the front-end
     * replaces it: once the signal is done, the slot holds the new eventfd only, though the control thread did
     * nothing more (no second replacement, no stop), and the signal's write went to the old eventfd.
     */
    @Test
    void anEventFdReplacedUnderASignalInFlightIsClosedWithoutWaitingForTheControlThread() {
        long before = eventFds();
        EventFd old = EventFd.create(EventFd.EFD_CLOEXEC);
        old.write(FULL);
        EventFd next = EventFd.create(EventFd.EFD_CLOEXEC);
        int oldNumber = old.fileDescriptor().fd();
        // the test's own views of both eventfds, to read their counters after the slot owns them
        FileDescriptor oldView = old.fileDescriptor().duplicate();
        FileDescriptor nextView = next.fileDescriptor().duplicate();
        EventFdSlot slot = new EventFdSlot();
        try {
            slot.replace(old);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread signaller = new Thread(() -> {
                try {
                    slot.signal(); // blocks: the counter is full
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "signaller");
            signaller.setDaemon(true); // a failing run must not keep the JVM waiting on it
            signaller.start();
            assertTimeoutPreemptively(WATCHDOG, () -> {
                while (!someThreadBlockedInWrite(oldNumber)) {
                    Thread.sleep(1);
                }
            });
            slot.replace(next);
            assertEquals(before + 3, eventFds(), "the slot's number and the test's two views: the old number is gone");

            // Switched to non-blocking only now (the flag belongs to the open file, the slot's too): the blocked
            // write goes on waiting, and the read below takes the counter without blocking.
            try (EventFd oldCounter = EventFd.adopt(oldView); EventFd nextCounter = EventFd.adopt(nextView)) {
                assertEquals(FULL, oldCounter.tryRead());
                assertTimeoutPreemptively(WATCHDOG, () -> signaller.join());
                assertNull(failure.get());
                assertEquals(1, oldCounter.tryRead(), "the signal in flight landed on the eventfd it started on");
                assertEquals(before + 3, eventFds(), "nothing more to close once the signal is done");

                slot.signal();
                assertEquals(1, nextCounter.tryRead(), "signals go to the new eventfd");
                assertEquals(0, oldCounter.tryRead());
                close(slot);
                assertFalse(slot.holdsDescriptor());
                assertEquals(before + 2, eventFds(), "the test's views only");
            }
            assertEquals(before, eventFds());
        } finally {
            close(slot);
            oldView.close();
            nextView.close();
        }
    }

    /**
     * QEMU sends SET_VRING_CALL on every interrupt mask and unmask for the life of a VM, while the device signals
     * all the time: after every one of thousands of replacements under a thread that does nothing but signal, the
     * slot holds exactly one descriptor, and every signal lands on one of the eventfds it was given.
     */
    @Test
    void thousandsOfReplacementsUnderConstantSignallingHoldOneDescriptor() throws Exception {
        long before = eventFds();
        EventFdSlot slot = new EventFdSlot();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong signals = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread signaller = new Thread(() -> {
            try {
                while (!stop.get()) {
                    slot.signal();
                    signals.incrementAndGet();
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "signaller");
        signaller.setDaemon(true);
        try {
            signaller.start();
            long landed = assertTimeoutPreemptively(WATCHDOG, () -> {
                long n = 0;
                for (int i = 0; i < 5_000; i++) {
                    EventFd next = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
                    try (EventFd view = EventFd.adopt(next.fileDescriptor().duplicate())) {
                        slot.replace(next);
                        long held = eventFds() - before - 1; // less the test's view
                        assertEquals(1, held, "descriptors the slot holds after replacement " + i);
                        n += view.tryRead();
                    }
                    assertNull(failure.get());
                }
                return n;
            });
            stop.set(true);
            signaller.join(WATCHDOG.toMillis());
            assertFalse(signaller.isAlive());
            assertNull(failure.get());
            assertTrue(landed > 0 && landed <= signals.get(), landed + " signals landed of " + signals.get());
            assertTrue(slot.holdsDescriptor());
        } finally {
            stop.set(true);
            close(slot);
        }
        assertEquals(before, eventFds());
    }

    /**
     * A front-end that never reads its call eventfd, or filled it on purpose: a signal into the saturated counter
     * (EAGAIN) is no failure of the signalling thread (the front-end is notified already), and adds nothing.
     */
    @Test
    void aSignalIntoASaturatedEventFdIsNoFailure() {
        EventFd frontEnd = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
        EventFdSlot slot = new EventFdSlot();
        try (EventFd view = EventFd.adopt(frontEnd.fileDescriptor().duplicate())) {
            slot.replace(frontEnd);
            view.write(FULL);
            slot.signal();
            slot.signal();
            assertEquals(FULL, view.tryRead(), "the counter as the front-end left it");
            slot.signal();
            assertEquals(1, view.tryRead(), "signals land again once it is read");
        } finally {
            close(slot);
        }
    }

    /** Empties and releases the slot and closes its number (what a connection's end and the retire path do). */
    private static void close(EventFdSlot slot) {
        List<EventFd> numbers = new ArrayList<>();
        slot.release(numbers);
        numbers.forEach(EventFd::close);
    }

    /**
     * A ring's stop does not close the slot's number: a device thread that read the slot's eventfd just before the
     * stop (a stuck worker coming back) and signals it after lands in the sink, not on the front-end's eventfd, and
     * not on a number the kernel handed to someone else meanwhile; the front-end's eventfd is let go at once, and
     * the number is closed only by the release (the device's retire path).
     */
    @Test
    void aStoppedSlotKeepsItsNumberOnASinkUntilReleasedSoALateSignalLandsNowhereElse() {
        long before = eventFds();
        EventFd frontEnd = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
        int number = frontEnd.fileDescriptor().fd();
        EventFdSlot slot = new EventFdSlot();
        try (EventFd frontEndView = EventFd.adopt(frontEnd.fileDescriptor().duplicate());
             EventFd sink = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
            slot.replace(frontEnd);
            slot.empty(() -> sink);
            slot.signal();
            assertEquals(0, frontEndView.tryRead(), "no signal after the stop");
            // A thread that read the slot's eventfd before the stop writes to it now: the same number, still open.
            frontEnd.write(1);
            assertEquals(0, frontEndView.tryRead(), "the late signal does not reach the front-end");
            assertEquals(1, sink.tryRead(), "it lands in the sink");
            assertEquals(EVENTFD, OpenFds.snapshot().get(number), "the number stays open, on the sink");
            assertEquals(before + 3, eventFds(), "the number, the view and the sink: the front-end's is let go");
            List<EventFd> numbers = new ArrayList<>();
            slot.release(numbers);
            assertEquals(List.of(frontEnd), numbers, "the number goes to the retire path");
            numbers.forEach(EventFd::close);
            assertFalse(slot.holdsDescriptor());
            assertEquals(before + 2, eventFds(), "the view and the sink only");
        } finally {
            close(slot);
        }
        assertEquals(before, eventFds());
    }

    /**
     * Whether a thread of this process is in a write(2) system call on descriptor {@code fd}, as
     * /proc/self/task/TID/syscall shows (the call number, then its arguments in hex): a signal that got as far as
     * the kernel.
     */
    private static boolean someThreadBlockedInWrite(int fd) {
        String write = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> "1";
            case "aarch64" -> "64";
            default -> throw new IllegalStateException("write(2)'s number is not known here for " + System.getProperty("os.arch"));
        };
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            return tasks.anyMatch(t -> {
                try {
                    String[] call = Files.readString(t.resolve("syscall")).trim().split(" ");
                    return call.length > 1 && call[0].equals(write) && Long.decode(call[1]) == fd;
                } catch (IOException endedMeanwhile) {
                    return false;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
