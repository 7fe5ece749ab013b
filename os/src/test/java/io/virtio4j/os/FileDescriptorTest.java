package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.testkit.OpenFds;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(NoFdLeaks.class)
class FileDescriptorTest {

    @Test
    void closeClosesOnceAndAgainDoesNothing() {
        FileDescriptor fd = Memfd.create("fd-test", 0);
        int n = fd.fd();
        assertTrue(OpenFds.isOpen(n));
        fd.close();
        assertFalse(OpenFds.isOpen(n));
        assertFalse(fd.isOpen());
        fd.close();
    }

    @Test
    void useAfterCloseThrowsFileDescriptorClosed() {
        FileDescriptor fd = Memfd.create("fd-test", 0);
        fd.close();
        assertThrows(FileDescriptorClosedException.class, fd::fd);
        assertThrows(FileDescriptorClosedException.class, fd::release);
        assertThrows(FileDescriptorClosedException.class, () -> Memfd.truncate(fd, 10));
    }

    @Test
    void releaseHandsTheNumberOverWithoutClosingIt() {
        FileDescriptor fd = Memfd.create("fd-test", 0);
        int n = fd.release();
        fd.close(); // no longer ours to close
        assertTrue(OpenFds.isOpen(n));
        assertThrows(FileDescriptorClosedException.class, fd::fd);
        FileDescriptor.adopt(n).close();
        assertFalse(OpenFds.isOpen(n));
    }

    @Test
    void closingANumberThatIsNotOpenNamesTheCallAndErrno() {
        int notOpen = 999_999;
        LinuxException e = assertThrows(LinuxException.class, () -> FileDescriptor.adopt(notOpen).close());
        assertEquals(Errno.EBADF, e.errno());
        assertEquals("close(fd 999999)", e.call());
        assertTrue(e.getMessage().startsWith("close(fd 999999) failed: EBADF (9): Bad file descriptor"), e.getMessage());
    }

    @Test
    void negativeNumbersAreNotAdopted() {
        assertThrows(IllegalArgumentException.class, () -> FileDescriptor.adopt(-1));
    }
}
