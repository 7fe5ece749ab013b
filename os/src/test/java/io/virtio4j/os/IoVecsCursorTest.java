package io.virtio4j.os;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How a short transfer goes on over a run of entries: whole entries, or an entry's rest alone; the run untouched. */
class IoVecsCursorTest {
    @Test
    void aTransferGoesOnFromTheNextWholeEntryOrFromInsideOneThroughTheRestEntry() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(1000);
            IoVecs v = IoVecs.allocate(arena, 5);
            v.set(0, mem, 0, 1);   // not in the run
            v.set(1, mem, 0, 100);
            v.set(2, mem, 100, 0); // empty
            v.set(3, mem, 100, 300);
            v.set(4, mem, 400, 50);
            IoVecs rest = IoVecs.allocate(arena, 1);
            IoVecs.Cursor c = new IoVecs.Cursor();
            c.start(v, 1, 4);
            assertSame(v, c.array(rest));
            assertEquals(1, c.index());
            assertEquals(4, c.count());

            assertTrue(c.advance(100)); // entry 1 used up exactly, the empty one passed over
            assertSame(v, c.array(rest));
            assertEquals(3, c.index());
            assertEquals(2, c.count());

            assertTrue(c.advance(120)); // inside entry 3
            assertSame(rest, c.array(rest));
            assertEquals(0, c.index());
            assertEquals(1, c.count());
            assertEquals(mem.address() + 220, rest.base(0));
            assertEquals(180, rest.length(0));

            assertTrue(c.advance(180)); // the rest of entry 3
            assertSame(v, c.array(rest));
            assertEquals(4, c.index());
            assertEquals(1, c.count());

            assertTrue(c.advance(50));
            assertEquals(0, c.count(), "the run is used up");
            assertEquals(100, v.length(1), "the run's entries as the caller set them");
            assertEquals(300, v.length(3));
            assertEquals(mem.address() + 100, v.base(3));
        }
    }

    @Test
    void moreThanTheRunHoldsIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(100);
            IoVecs v = IoVecs.allocate(arena, 2);
            v.set(0, mem, 0, 60);
            v.set(1, mem, 60, 40);
            IoVecs.Cursor c = new IoVecs.Cursor();
            c.start(v, 0, 2);
            assertTrue(c.advance(70));
            assertFalse(c.advance(31), "101 bytes moved over 100");
        }
    }
}
