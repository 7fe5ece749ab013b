package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static io.virtio4j.os.Epoll.EPOLLIN;
import static io.virtio4j.os.EventFd.EFD_CLOEXEC;
import static io.virtio4j.os.EventFd.EFD_NONBLOCK;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

@ExtendWith(NoFdLeaks.class)
class EpollTest {
    private static final int NEVER_MILLIS = 60_000;

    @Test
    void anEventFdIsReportedWithItsDataOnceWritten() {
        try (Epoll epoll = Epoll.create(4); EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            epoll.add(e.fileDescriptor(), EPOLLIN, 42L);
            assertEquals(0, epoll.await(0));
            e.write(1);
            assertEquals(1, epoll.await(NEVER_MILLIS));
            assertEquals(1, epoll.count());
            assertEquals(42L, epoll.data(0));
            assertEquals(EPOLLIN, epoll.events(0) & EPOLLIN);
        }
    }

    @Test
    void aWriteOnAnotherThreadWakesTheWaiter() throws InterruptedException {
        try (Epoll epoll = Epoll.create(4); EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            epoll.add(e.fileDescriptor(), EPOLLIN, 7L);
            AtomicInteger ready = new AtomicInteger(-1);
            Thread waiter = Thread.ofPlatform().start(() -> ready.set(epoll.await(NEVER_MILLIS)));
            e.write(1);
            waiter.join();
            assertEquals(1, ready.get());
            assertEquals(7L, epoll.data(0));
        }
    }

    @Test
    void dataAboveThirtyTwoBitsSurvivesAndEveryReadyDescriptorIsReported() {
        try (Epoll epoll = Epoll.create(4);
             EventFd a = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC);
             EventFd b = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            epoll.add(a.fileDescriptor(), EPOLLIN, 0x1_0000_0001L);
            epoll.add(b.fileDescriptor(), EPOLLIN, -2L);
            a.write(1);
            b.write(1);
            assertEquals(2, epoll.await(NEVER_MILLIS));
            assertEquals(Set.of(0x1_0000_0001L, -2L), Set.of(epoll.data(0), epoll.data(1)));
        }
    }

    @Test
    void modifyChangesTheDataAndDeleteStopsReports() {
        try (Epoll epoll = Epoll.create(1); EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            epoll.add(e.fileDescriptor(), EPOLLIN, 1L);
            epoll.modify(e.fileDescriptor(), EPOLLIN, 2L);
            e.write(1);
            assertEquals(1, epoll.await(NEVER_MILLIS));
            assertEquals(2L, epoll.data(0));
            epoll.delete(e.fileDescriptor());
            assertEquals(0, epoll.await(0));
        }
    }

    @Test
    void addingTwiceIsEEXISTAndIndexesBeyondTheCountAreRefused() {
        try (Epoll epoll = Epoll.create(2); EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            epoll.add(e.fileDescriptor(), EPOLLIN, 1L);
            LinuxException x = assertThrows(LinuxException.class, () -> epoll.add(e.fileDescriptor(), EPOLLIN, 1L));
            assertEquals("EEXIST", x.errnoName());
            assertEquals(0, epoll.await(0));
            assertThrows(IndexOutOfBoundsException.class, () -> epoll.data(0));
        }
    }
}
