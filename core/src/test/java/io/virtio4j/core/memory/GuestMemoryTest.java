package io.virtio4j.core.memory;

import io.virtio4j.core.error.AddressOutOfRangeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static io.virtio4j.core.RingTestSupport.allocate;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Guest address translation: region boundaries, overflow, and the builder's region checks. */
class GuestMemoryTest {
    private static final long BASE = 0x1000;
    private static final long SIZE = 0x1000;

    private Arena arena;
    private MemorySegment seg;
    private GuestMemory memory;

    @BeforeEach
    void open() {
        arena = Arena.ofConfined();
        seg = allocate(arena, SIZE);
        memory = GuestMemory.of(seg, BASE);
    }

    @AfterEach
    void close() {
        arena.close();
    }

    @ParameterizedTest(name = "[{0}, +{1}) -> {2}")
    @CsvSource({
            // addr,               len,                  region
            "0x1000,               0,                    0",  // start, empty
            "0x1000,               1,                    0",  // first byte
            "0x1000,               0x1000,               0",  // the whole region
            "0x1FFF,               1,                    0",  // last byte (end - 1)
            "0x2000,               0,                    0",  // end, empty
            "0x2000,               1,                    -1", // one past the end
            "0x1FFF,               2,                    -1", // straddles the end
            "0x1000,               0x1001,               -1", // one byte too long
            "0x0FFF,               1,                    -1", // just below the start
            "0x0FFF,               2,                    -1", // straddles the start
            "0x0FFF,               0,                    -1", // empty, below the start
            "0,                    0x2000,               -1", // covers the region from below
            "0x1800,               0x7FFFFFFFFFFFFFFF,   -1", // huge length
            "0xFFFFFFFFFFFFFFF0,   0x100,                -1", // addr + len overflows 64 bits
            "0x1800,               -1,                   -1", // negative length
    })
    void findHonoursTheRegionBoundaries(String addr, String len, int region) {
        assertEquals(region, memory.find(Long.parseUnsignedLong(addr.replace("0x", ""), 16), Long.decode(len)));
    }

    @Test
    void requireNamesTheFieldAndAddress() {
        assertEquals(0, memory.require(0x1FFF, 1, "desc[0].addr"));
        AddressOutOfRangeException e = assertThrows(AddressOutOfRangeException.class,
                () -> memory.require(0x2000, 1, "desc[3].addr"));
        assertEquals("desc[3].addr", e.field());
        assertEquals(0x2000, e.value());

        e = assertThrows(AddressOutOfRangeException.class,
                () -> memory.require(0xFFFFFFFFFFFFFFF0L, 0x100, "indirect[1].addr"));
        assertEquals("indirect[1].addr", e.field());
        assertEquals(0xFFFFFFFFFFFFFFF0L, e.value());
        assertTrue(e.getMessage().contains("overflows"), e.getMessage());
    }

    @Test
    void offsetsAndSlicesAreRelativeToTheRegionStart() {
        assertEquals(0x234, memory.offsetIn(0, 0x1234));
        MemorySegment slice = memory.slice(0x1234, 16, "x");
        assertEquals(seg.address() + 0x234, slice.address());
        assertEquals(16, slice.byteSize());
        assertThrows(AddressOutOfRangeException.class, () -> memory.slice(0x1FF8, 16, "x"));
        assertEquals(1, memory.regionCount());
        assertEquals(BASE, memory.regionStart(0));
        assertEquals(SIZE, memory.regionSize(0));
        assertSame(seg, memory.region(0));
    }

    @Test
    void adjacentRegionsAreFoundSeparatelyButNotSpanned() {
        MemorySegment low = allocate(arena, 0x1000);
        MemorySegment high = allocate(arena, 0x1000);
        GuestMemory two = GuestMemory.builder().region(0x3000, high).region(0x2000, low).build();
        assertEquals(2, two.regionCount());
        assertEquals(1, two.find(0x2000, 0x1000));
        assertEquals(0, two.find(0x3000, 0x1000));
        assertEquals(1, two.find(0x2FFF, 1));
        assertEquals(0, two.find(0x3000, 1));
        assertEquals(-1, two.find(0x2FF8, 16), "one element must lie inside one region");
        assertEquals(-1, two.find(0x2000, 0x2000));
        assertEquals(0x10, two.offsetIn(0, 0x3010));
    }

    @Test
    void regionEndingAtTheTopOfTheAddressSpace() {
        GuestMemory top = GuestMemory.of(seg, 0xFFFF_FFFF_FFFF_F000L);
        assertEquals(0, top.find(0xFFFF_FFFF_FFFF_FFF0L, 0x10));
        assertEquals(0, top.find(0xFFFF_FFFF_FFFF_F000L, 0x1000));
        assertEquals(-1, top.find(0xFFFF_FFFF_FFFF_FFF0L, 0x11));
        assertEquals(-1, top.find(0xFFFF_FFFF_FFFF_FFF0L, 0x100));
        assertEquals(-1, top.find(0, 1));
    }

    @Test
    void builderRejectsARegionThatWrapsTheAddressSpace() {
        assertThrows(IllegalArgumentException.class, () -> GuestMemory.of(seg, 0xFFFF_FFFF_FFFF_F800L));
    }

    @Test
    void builderRejectsEmptyRegionsAndEmptyMemories() {
        assertThrows(IllegalArgumentException.class, () -> GuestMemory.of(seg.asSlice(0, 0), 0));
        assertThrows(IllegalArgumentException.class, () -> GuestMemory.builder().build());
    }

    @ParameterizedTest(name = "[{0}, +{1}) overlaps [0x1000, +0x1000)")
    @CsvSource({
            "0x1000, 0x1000", // identical
            "0x0800, 0x1000", // overlaps the start
            "0x1800, 0x1000", // overlaps the end
            "0x1400, 0x0100", // inside
            "0x0000, 0x4000", // contains it
            "0x0001, 0x1000", // shares one byte at the start
            "0x1FFF, 0x0010", // shares the last byte
    })
    void builderRejectsOverlappingRegions(String start, String size) {
        MemorySegment other = allocate(arena, Long.decode(size));
        GuestMemory.Builder builder = GuestMemory.builder().region(BASE, seg);
        assertThrows(IllegalArgumentException.class, () -> builder.region(Long.decode(start), other));
    }

    @Test
    void builderAcceptsManyDisjointRegions() {
        GuestMemory.Builder builder = GuestMemory.builder();
        for (int i = 0; i < 9; i++) { // more than the builder's initial capacity
            builder.region(0x10_0000L * i, allocate(arena, 0x100));
        }
        GuestMemory many = builder.build();
        assertEquals(9, many.regionCount());
        for (int i = 0; i < 9; i++) {
            assertEquals(i, many.find(0x10_0000L * i + 0xFF, 1));
            assertEquals(-1, many.find(0x10_0000L * i + 0x100, 1));
        }
    }

    /**
     * A full table (509 regions, as GET_MAX_MEM_SLOTS allows) given in shuffled order, with gaps and adjacent
     * neighbours, half of it above 2^63 (guest addresses compare unsigned): every lookup answers what the definition
     * says (the one region holding the whole range, by its insertion index, or -1), checked against a scan of all
     * regions for random ranges around every region's edges.
     */
    @Test
    void findInAFullShuffledTableMatchesTheDefinition() {
        int n = 509;
        long[] starts = new long[n];
        long[] sizes = new long[n];
        Random rnd = new Random(42);
        long at = 0x1000;
        for (int i = 0; i < n; i++) {
            if (i == n / 2) {
                at = 0x8000_0000_0000_0000L; // the upper half of the address space
            }
            at += rnd.nextBoolean() ? 0 : 0x1000L * (1 + rnd.nextInt(4)); // adjacent or after a gap
            sizes[i] = 0x100L * (1 + rnd.nextInt(16));
            starts[i] = at;
            at += sizes[i];
        }
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            order.add(i);
        }
        Collections.shuffle(order, rnd);
        GuestMemory.Builder b = GuestMemory.builder();
        long[] insStart = new long[n];
        long[] insSize = new long[n];
        for (int k = 0; k < n; k++) {
            int i = order.get(k);
            insStart[k] = starts[i];
            insSize[k] = sizes[i];
            b.region(starts[i], allocate(arena, sizes[i]));
        }
        GuestMemory table = b.build();
        for (int k = 0; k < n; k++) {
            for (int q = 0; q < 8; q++) {
                long addr = insStart[k] + rnd.nextInt((int) insSize[k] + 64) - 32;
                long len = rnd.nextInt(4) == 0 ? 0 : 1 + rnd.nextInt((int) insSize[k] + 32);
                assertEquals(holder(insStart, insSize, addr, len), table.find(addr, len),
                        "[0x" + Long.toHexString(addr) + ", +" + len + ")");
            }
            assertEquals(k, table.find(insStart[k], insSize[k]), "the whole region");
            assertEquals(-1, table.find(insStart[k], insSize[k] + 1), "one byte more is in no one region");
        }
        assertEquals(-1, table.find(0, 1));
        assertEquals(-1, table.find(-1L, 1));
    }

    /** The definition: the region holding all of [addr, addr + len); for len 0 at a shared edge, the later one. */
    private static int holder(long[] start, long[] size, long addr, long len) {
        int found = -1;
        for (int i = 0; i < start.length; i++) {
            long off = addr - start[i];
            if (Long.compareUnsigned(off, size[i]) <= 0 && len <= size[i] - off
                    && (found < 0 || Long.compareUnsigned(start[i], start[found]) > 0)) {
                found = i;
            }
        }
        return found;
    }
}
