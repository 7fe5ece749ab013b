package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static io.virtio4j.os.EventFd.EFD_CLOEXEC;
import static io.virtio4j.os.EventFd.EFD_NONBLOCK;
import static io.virtio4j.os.EventFd.EFD_SEMAPHORE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

@ExtendWith(NoFdLeaks.class)
class EventFdTest {

    @Test
    void readTakesTheWholeCounter() {
        try (EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            e.write(3);
            e.write(4);
            assertEquals(7, e.read());
            assertEquals(0, e.tryRead());
        }
    }

    /** A counter at its largest (2^64-2) takes no more: tryWrite says so instead of throwing, and adds nothing. */
    @Test
    void tryWriteOnASaturatedCounterReturnsFalseAndLeavesIt() {
        long full = 0xFFFF_FFFF_FFFF_FFFEL;
        try (EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            assertTrue(e.tryWrite(full - 1));
            assertTrue(e.tryWrite(1), "up to the largest value");
            assertFalse(e.tryWrite(1), "one more would pass it");
            assertEquals(full, e.tryRead());
            assertTrue(e.tryWrite(1));
            assertEquals(1, e.tryRead());
        }
    }

    @Test
    void semaphoreModeTakesOneAtATime() {
        try (EventFd e = EventFd.create(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC)) {
            e.write(2);
            assertEquals(1, e.tryRead());
            assertEquals(1, e.read());
            assertEquals(0, e.tryRead());
        }
    }

    @Test
    void blockingReadWaitsForAWriteOnAnotherThread() throws InterruptedException {
        try (EventFd e = EventFd.create(EFD_CLOEXEC)) {
            assertEquals(5, readWhileAnotherThreadWrites(e, 5));
        }
    }

    @Test
    void readOnANonBlockingEventFdWaitsForAWriteOnAnotherThread() throws InterruptedException {
        try (EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            assertEquals(9, readWhileAnotherThreadWrites(e, 9));
        }
    }

    private static long readWhileAnotherThreadWrites(EventFd e, long value) throws InterruptedException {
        AtomicLong read = new AtomicLong();
        Thread reader = Thread.ofPlatform().start(() -> read.set(e.read()));
        e.write(value);
        reader.join();
        return read.get();
    }

    @Test
    void tryReadOnABlockingEventFdIsRefused() {
        try (EventFd e = EventFd.create(EFD_CLOEXEC)) {
            assertThrows(IllegalStateException.class, e::tryRead);
        }
    }

    @Test
    void overflowingANonBlockingCounterIsEAGAIN() {
        try (EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            e.write(0xffff_ffff_ffff_fffeL); // the largest counter value
            LinuxException x = assertThrows(LinuxException.class, () -> e.write(1));
            assertEquals("EAGAIN", x.errnoName());
            assertEquals(0xffff_ffff_ffff_fffeL, e.tryRead());
        }
    }

    @Test
    void writingAllOnesIsEINVAL() {
        try (EventFd e = EventFd.create(EFD_NONBLOCK | EFD_CLOEXEC)) {
            LinuxException x = assertThrows(LinuxException.class, () -> e.write(-1L));
            assertEquals("EINVAL", x.errnoName());
            assertEquals("eventfd write(" + e.fileDescriptor() + ")", x.call());
        }
    }

    @Test
    void unknownFlagsAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> EventFd.create(0x4));
    }

    @Test
    void useAfterCloseThrowsFileDescriptorClosed() {
        EventFd e = EventFd.create(EFD_NONBLOCK);
        e.close();
        assertThrows(FileDescriptorClosedException.class, () -> e.write(1));
        assertThrows(FileDescriptorClosedException.class, e::tryRead);
    }
}
