package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(NoFdLeaks.class)
class MemfdMmapTest {
    private static final long PAGE = Mmap.pageSize();

    @Test
    void twoMappingsOfOneMemfdSeeEachOthersWrites() {
        try (FileDescriptor fd = Memfd.create("two-mappings", 2 * PAGE); Arena arena = Arena.ofConfined()) {
            MemorySegment a = Mmap.mapShared(fd, 2 * PAGE, arena);
            MemorySegment b = Mmap.mapShared(fd, 2 * PAGE, arena);
            assertTrue(a.address() != b.address(), "two distinct mappings");
            a.set(JAVA_LONG, PAGE + 8, 0x1122334455667788L);
            assertEquals(0x1122334455667788L, b.get(JAVA_LONG, PAGE + 8));
            b.set(JAVA_LONG, 0, 42L);
            assertEquals(42L, a.get(JAVA_LONG, 0));
        }
    }

    @Test
    void mappingAtAnUnalignedOffsetStartsAtThatByte() {
        long offset = PAGE + 104;
        try (FileDescriptor fd = Memfd.create("offset", 2 * PAGE); Arena arena = Arena.ofConfined()) {
            MemorySegment whole = Mmap.mapShared(fd, 2 * PAGE, arena);
            whole.set(JAVA_LONG, offset, 7L);
            whole.set(JAVA_LONG, offset + 56, 8L);
            MemorySegment part = Mmap.mapShared(fd, offset, 64, arena);
            assertEquals(64, part.byteSize());
            assertEquals(7L, part.get(JAVA_LONG, 0));
            assertEquals(8L, part.get(JAVA_LONG, 56));
        }
    }

    @Test
    void mappingOutlivesTheDescriptorAndClosingTheArenaUnmaps() throws IOException {
        String name = "unmap-on-arena-close";
        Arena arena = Arena.ofConfined();
        try (FileDescriptor fd = Memfd.create(name, PAGE)) {
            Mmap.mapShared(fd, PAGE, arena).set(JAVA_LONG, 0, 1L);
        }
        assertTrue(mapped(name), "still mapped after the fd is closed");
        arena.close();
        assertFalse(mapped(name), "unmapped when the arena closed");
    }

    @Test
    void truncateGrowsTheFile() {
        try (FileDescriptor fd = Memfd.create("grow", 0); Arena arena = Arena.ofConfined()) {
            Memfd.truncate(fd, PAGE);
            MemorySegment m = Mmap.mapShared(fd, PAGE, arena);
            m.set(JAVA_LONG, PAGE - 8, 5L);
            assertEquals(5L, m.get(JAVA_LONG, PAGE - 8));
        }
    }

    @Test
    void mmapOfADescriptorThatCannotBeMappedNamesTheCallAndErrno() {
        try (EventFd notMappable = EventFd.create(EventFd.EFD_CLOEXEC); Arena arena = Arena.ofConfined()) {
            LinuxException e = assertThrows(LinuxException.class,
                    () -> Mmap.mapShared(notMappable.fileDescriptor(), PAGE, arena));
            assertEquals("ENODEV", e.errnoName());
            assertTrue(e.call().startsWith("mmap("), e.call());
        }
    }

    @Test
    void badArgumentsAreRejectedBeforeAnyCall() {
        try (FileDescriptor fd = Memfd.create("bad", PAGE); Arena arena = Arena.ofConfined()) {
            assertThrows(IllegalArgumentException.class, () -> Mmap.mapShared(fd, 0, arena));
            assertThrows(IllegalArgumentException.class, () -> Mmap.mapShared(fd, -1, PAGE, arena));
            assertThrows(IllegalArgumentException.class, () -> Memfd.truncate(fd, -1));
        }
    }

    @Test
    void mappingIntoAClosedArenaLeavesNothingMapped() throws IOException {
        String name = "closed-arena";
        Arena arena = Arena.ofConfined();
        arena.close();
        try (FileDescriptor fd = Memfd.create(name, PAGE)) {
            assertThrows(IllegalStateException.class, () -> Mmap.mapShared(fd, PAGE, arena));
        }
        assertFalse(mapped(name));
    }

    /** Whether a memfd called {@code name} is mapped into this process. */
    private static boolean mapped(String name) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().anyMatch(l -> l.contains("/memfd:" + name + " "));
    }
}
