package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

@ExtendWith(NoFdLeaks.class)
class MemfdSealTest {
    private static final long PAGE = Mmap.pageSize();

    @Test
    void aSealedMemfdIsZeroFilledAndCanNeitherGrowNorShrinkNorTakeOtherSeals() {
        try (FileDescriptor fd = Memfd.createSealed("sealed", 3 * PAGE); Arena arena = Arena.ofConfined()) {
            assertEquals(Memfd.F_SEAL_GROW | Memfd.F_SEAL_SHRINK | Memfd.F_SEAL_SEAL, Memfd.seals(fd));
            assertEquals(3 * PAGE, fd.size());
            MemorySegment m = Mmap.mapShared(fd, 3 * PAGE, arena);
            for (long at = 0; at < m.byteSize(); at += 8) {
                assertEquals(0L, m.get(JAVA_LONG, at), "byte " + at);
            }
            LinuxException shrink = assertThrows(LinuxException.class, () -> Memfd.truncate(fd, PAGE));
            assertEquals(Errno.EPERM, shrink.errno());
            LinuxException grow = assertThrows(LinuxException.class, () -> Memfd.truncate(fd, 4 * PAGE));
            assertEquals(Errno.EPERM, grow.errno());
            assertEquals(3 * PAGE, fd.size());
        }
    }

    @Test
    void aPlainMemfdTakesNoSeals() {
        try (FileDescriptor fd = Memfd.create("plain", PAGE)) {
            // without MFD_ALLOW_SEALING the kernel seals it with F_SEAL_SEAL only: no other seal can be added
            assertEquals(Memfd.F_SEAL_SEAL, Memfd.seals(fd));
            Memfd.truncate(fd, 2 * PAGE);
            assertEquals(2 * PAGE, fd.size());
        }
    }
}
