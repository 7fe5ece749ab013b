package io.virtio4j.core.device;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.RingTestSupport.allocate;
import static io.virtio4j.core.RingTestSupport.bytes;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** gather/scatter treat the readable and writable parts as byte streams across element boundaries. */
class DescriptorChainTest {
    private Arena arena;
    private MemorySegment guest;
    private DescriptorChain chain;

    @BeforeEach
    void open() {
        arena = Arena.ofConfined();
        guest = allocate(arena, 256);
        for (int i = 0; i < 64; i++) {
            guest.set(JAVA_BYTE, i, (byte) i);
        }
        chain = new DescriptorChain(8);
        chain.reset(5);
        chain.add(guest, 0, 3, false);   // bytes 0..2
        chain.add(guest, 10, 5, false);  // bytes 10..14
        chain.add(guest, 20, 7, false);  // bytes 20..26
        chain.add(guest, 128, 4, true);
        chain.add(guest, 160, 4, true);
    }

    @AfterEach
    void close() {
        arena.close();
    }

    @Test
    void describesItsElements() {
        assertEquals(5, chain.head());
        assertEquals(5, chain.count());
        assertEquals(3, chain.readableCount());
        assertEquals(2, chain.writableCount());
        assertEquals(15, chain.readableBytes());
        assertEquals(8, chain.writableBytes());
        assertEquals(guest.address() + 10, chain.readable(1).address());
        assertEquals(guest.address() + 160, chain.writable(1).address());
        assertThrows(IndexOutOfBoundsException.class, () -> chain.readable(3));
        assertThrows(IndexOutOfBoundsException.class, () -> chain.writable(2));
        assertThrows(IndexOutOfBoundsException.class, () -> chain.offset(5));
    }

    @Test
    void gatherSkipsAndCrossesElementBoundaries() {
        MemorySegment dst = allocate(arena, 16);
        assertEquals(6, chain.gather(4, dst, 0, 6));
        // stream: 0 1 2 | 10 11 12 13 14 | 20 .. 26; skip 4 -> starts at 11
        assertArrayEquals(bytes(11, 12, 13, 14, 20, 21), bytes(dst, 0, 6));
        assertEquals(15, chain.gather(0, dst, 1, 100), "stops at the end of the readable part");
        assertEquals(0, chain.gather(15, dst, 0, 4));
    }

    @Test
    void scatterFillsTheWritablePartAndNothingElse() {
        MemorySegment src = allocate(arena, 16);
        for (int i = 0; i < 16; i++) {
            src.set(JAVA_BYTE, i, (byte) (0x80 + i));
        }
        assertEquals(6, chain.scatter(2, src, 0, 16), "8 writable bytes, 2 skipped");
        assertArrayEquals(bytes(0, 0, 0x80, 0x81, 0), bytes(guest, 128, 5));
        assertArrayEquals(bytes(0x82, 0x83, 0x84, 0x85, 0), bytes(guest, 160, 5));
        assertArrayEquals(bytes(10, 11, 12, 13, 14), bytes(guest, 10, 5), "readable elements are never written");
    }
}
