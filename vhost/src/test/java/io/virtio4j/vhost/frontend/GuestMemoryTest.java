package io.virtio4j.vhost.frontend;

import io.virtio4j.os.Mmap;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GuestMemoryTest {
    @Test
    void carvesAlignedPiecesAndTranslatesBothWays() {
        try (GuestMemory m = GuestMemory.create("gm-test", 3 * GuestMemory.PAGE, 0x10_0000, 0x7000_0000_0000L, false)) {
            assertEquals(3 * GuestMemory.PAGE, m.size());
            long a = m.carve(10, 8);
            long b = m.carve(100, GuestMemory.PAGE);
            long c = m.carve(1, 64);
            assertEquals(0, a);
            assertEquals(GuestMemory.PAGE, b);
            assertEquals(GuestMemory.PAGE + 128, c);
            MemorySegment s = m.memory().asSlice(b, 100);
            assertEquals(0x10_0000 + GuestMemory.PAGE, m.gpa(s));
            assertEquals(0x7000_0000_0000L + GuestMemory.PAGE, m.user(s));
            assertEquals(m.gpa(b), m.gpa(s));
            VhostUserFrontend.Region r = m.region();
            assertEquals(0x10_0000, r.guestPhysAddr());
            assertEquals(0x7000_0000_0000L, r.userAddr());
            assertEquals(m.size(), r.size());
        }
    }

    /** What another process maps of the memfd is what this one wrote. */
    @Test
    void theMemfdHoldsTheMemory() {
        try (GuestMemory m = GuestMemory.create("gm-share", GuestMemory.PAGE); Arena arena = Arena.ofConfined()) {
            m.memory().set(ValueLayout.JAVA_LONG, 128, 0x1122_3344_5566_7788L);
            MemorySegment other = Mmap.mapShared(m.fd(), GuestMemory.PAGE, arena);
            assertEquals(0x1122_3344_5566_7788L, other.get(ValueLayout.JAVA_LONG, 128));
        }
    }

    @Test
    void exhaustionAndBadArgumentsAreNamed() {
        try (GuestMemory m = GuestMemory.create("gm-full", GuestMemory.PAGE)) {
            m.carve(4000, 8);
            GuestMemoryExhaustedException e = assertThrows(GuestMemoryExhaustedException.class, () -> m.carve(100, 8));
            assertTrue(e.getMessage().contains("100 bytes aligned to 8 asked, 4000 of 4096"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> m.carve(0, 8));
            assertThrows(IllegalArgumentException.class, () -> m.carve(8, 3));
            MemorySegment outside = Arena.ofAuto().allocate(8);
            assertThrows(IllegalArgumentException.class, () -> m.gpa(outside));
        }
        assertThrows(IllegalArgumentException.class, () -> GuestMemory.create("gm-bad", 4096, 100, 0, false));
        assertThrows(IllegalArgumentException.class, () -> GuestMemory.create("gm-bad", 0, 0, 0, false));
    }

    /**
     * Huge pages: mapped when the system has some free, otherwise a {@link HugePagesUnavailableException} that says
     * what to do (never a bare mmap error).
     */
    @Test
    void hugePagesMapOrSayWhyNot() throws IOException {
        long free = freeHugePages();
        if (free >= 1) {
            try (GuestMemory m = GuestMemory.create("gm-huge", 1, 0, GuestMemory.DEFAULT_USER_BASE, true)) {
                assertEquals(GuestMemory.HUGE_PAGE, m.size());
                m.memory().set(ValueLayout.JAVA_BYTE, GuestMemory.HUGE_PAGE - 1, (byte) 1);
            }
        } else {
            HugePagesUnavailableException e = assertThrows(HugePagesUnavailableException.class,
                    () -> GuestMemory.create("gm-huge", 1, 0, GuestMemory.DEFAULT_USER_BASE, true));
            assertTrue(e.getMessage().contains("nr_hugepages"), e.getMessage());
        }
    }

    private static long freeHugePages() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("HugePages_Free:")) {
                return Long.parseLong(line.substring("HugePages_Free:".length()).trim());
            }
        }
        return 0;
    }
}
