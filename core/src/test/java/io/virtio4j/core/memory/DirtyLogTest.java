package io.virtio4j.core.memory;

import io.virtio4j.core.error.DirtyLogOverflowException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dirty log's bit layout is the spec's ({@code log[page / 8] |= 1 << (page % 8)}), read back byte by byte from
 * the raw memory whatever word the atomic OR went through and wherever the log starts in its mapping; a range marks
 * exactly its pages; a page past the log is refused before any bit is set.
 */
class DirtyLogTest {

    /** Pages whose bit is set in the raw bytes {@code [start, start + bytes)} of {@code raw}, as the spec lays them. */
    private static long[] rawPages(MemorySegment raw, long start, long bytes) {
        return java.util.stream.LongStream.range(0, bytes * 8)
                .filter(p -> (raw.get(ValueLayout.JAVA_BYTE, start + p / 8) & (1 << (p % 8))) != 0).toArray();
    }

    @ParameterizedTest
    @ValueSource(longs = {0, 1, 2, 3, 5})
    void aRangeMarksExactlyItsPagesInTheSpecsByteLayoutWhereverTheLogStarts(long start) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment raw = arena.allocate(64, 8);
            DirtyLog log = new DirtyLog(raw, start, 16); // 128 pages
            log.mark(3 * DirtyLog.PAGE_SIZE + 100, DirtyLog.PAGE_SIZE); // pages 3 and 4
            log.mark(17 * DirtyLog.PAGE_SIZE, 1); // page 17, first byte
            log.mark(127 * DirtyLog.PAGE_SIZE + 4095, 1); // the last page's last byte
            log.mark(50 * DirtyLog.PAGE_SIZE, 0); // nothing
            assertEquals(java.util.Arrays.toString(new long[] {3, 4, 17, 127}),
                    java.util.Arrays.toString(rawPages(raw, start, 16)));
            for (long b = 0; b < 64; b++) {
                if (b < start || b >= start + 16) {
                    assertEquals(0, raw.get(ValueLayout.JAVA_BYTE, b), "byte " + b + " lies outside the log");
                }
            }
            assertTrue(log.isDirty(4));
            assertTrue(log.testAndClear(4));
            assertFalse(log.testAndClear(4), "cleared by the read before");
            assertFalse(log.isDirty(4));
            assertTrue(log.isDirty(3), "a neighbour's bit stays");
            assertEquals(3, log.dirtyPages(), "pages 3, 17 and 127 are still marked");
        }
    }

    /** A log sized for guest memory has a bit for its last page, in whole u64 chunks (QEMU's sizing). */
    @Test
    void aLogSizedForGuestMemoryCoversItsLastPageInWholeU64s() {
        assertEquals(0, DirtyLog.bytesCovering(0));
        assertEquals(8, DirtyLog.bytesCovering(1), "one page: one bit, one u64");
        assertEquals(8, DirtyLog.bytesCovering(64 * DirtyLog.PAGE_SIZE), "64 pages: 8 bytes");
        assertEquals(16, DirtyLog.bytesCovering(64 * DirtyLog.PAGE_SIZE + 1), "a 65th page needs the next u64");
        assertEquals(32768, DirtyLog.bytesCovering(1L << 30), "1 GiB: 262144 pages");
        assertThrows(IllegalArgumentException.class, () -> DirtyLog.bytesCovering(-1));
    }

    @Test
    void aRangeReachingPastTheLogIsRefusedNamingItsFirstPageWithoutABitAndSetsNoBit() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment raw = arena.allocate(8, 8);
            DirtyLog log = new DirtyLog(raw, 0, 2); // pages [0, 16)
            DirtyLogOverflowException e = assertThrows(DirtyLogOverflowException.class,
                    () -> log.mark(15 * DirtyLog.PAGE_SIZE, DirtyLog.PAGE_SIZE + 1));
            assertEquals("log", e.field());
            assertEquals(16, e.value());
            assertEquals(0, rawPages(raw, 0, 2).length, "the range's pages inside the log are not marked either");
            DirtyLogOverflowException wrap = assertThrows(DirtyLogOverflowException.class, () -> log.mark(-4096, 8192));
            assertEquals(-4096L >>> DirtyLog.PAGE_SHIFT, wrap.value(), "a range wrapping past 2^64 is past any log");
            log.mark(15 * DirtyLog.PAGE_SIZE + 4095, 1);
            assertEquals(1, rawPages(raw, 0, 2).length);
        }
    }

    @Test
    void hostRangesAreMarkedAtTheirRegionsGuestAddress() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment low = arena.allocate(2 * DirtyLog.PAGE_SIZE, 4096);
            MemorySegment high = arena.allocate(2 * DirtyLog.PAGE_SIZE, 4096);
            GuestMemory memory = GuestMemory.builder().region(0, low).region(0x10_0000, high).build();
            MemorySegment raw = arena.allocate(64, 8);
            DirtyLog log = new DirtyLog(raw, 0, 64); // 512 pages: 2 MiB
            log.markHost(memory, high, DirtyLog.PAGE_SIZE + 8, 16); // guest 0x101008: page 257
            log.markHost(memory, low.address() + 10, 1); // page 0
            assertEquals("[0, 257]", java.util.Arrays.toString(rawPages(raw, 0, 64)));
            assertThrows(IllegalArgumentException.class, () -> log.markHost(memory, low, DirtyLog.PAGE_SIZE, 2 * DirtyLog.PAGE_SIZE),
                    "a range leaving its region is the caller's bug");
        }
    }

    @Test
    void aLogWhoseWordsLeaveTheMappingIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment raw = arena.allocate(8, 8);
            assertThrows(IllegalArgumentException.class, () -> new DirtyLog(raw, 5, 4), "byte 8 is past the mapping");
            assertThrows(IllegalArgumentException.class, () -> new DirtyLog(raw.asSlice(1), 0, 4), "unaligned mapping");
            assertEquals(8, new DirtyLog(raw, 4, 1).pages());
        }
    }
}
