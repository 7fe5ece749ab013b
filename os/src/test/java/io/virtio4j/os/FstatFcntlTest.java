package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(NoFdLeaks.class)
class FstatFcntlTest {

    @Test
    void sizeIsTheMemfdLength() {
        try (FileDescriptor fd = Memfd.create("size", 12345)) {
            assertEquals(12345, fd.size());
            Memfd.truncate(fd, 1 << 20);
            assertEquals(1 << 20, fd.size());
        }
    }

    @Test
    void aDescriptorThatIsNotAnEventFdIsNotAdopted() {
        try (FileDescriptor memfd = Memfd.create("not-an-eventfd", 4096)) {
            LinuxException e = assertThrows(LinuxException.class, () -> EventFd.adopt(memfd));
            assertEquals(Errno.EINVAL, e.errno());
            assertTrue(e.getMessage().contains("memfd:not-an-eventfd"), e.getMessage());
        }
    }

    @Test
    void adoptedEventFdIsNonBlocking() {
        EventFd blocking = EventFd.create(EventFd.EFD_CLOEXEC);
        FileDescriptor raw = FileDescriptor.adopt(blocking.fileDescriptor().release());
        try (EventFd adopted = EventFd.adopt(raw)) {
            assertTrue(adopted.isNonBlocking());
            assertEquals(0, adopted.tryRead(), "tryRead on an empty adopted eventfd returns 0 instead of blocking");
            adopted.write(3);
            assertEquals(3, adopted.tryRead());
        }
    }

    @Test
    void sizeOfAClosedDescriptorIsRefused() {
        FileDescriptor fd = Memfd.create("closed", 1);
        fd.close();
        assertThrows(FileDescriptorClosedException.class, fd::size);
    }
}
