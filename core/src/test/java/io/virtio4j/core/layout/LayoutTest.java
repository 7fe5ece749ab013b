package io.virtio4j.core.layout;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.virtio4j.core.RingTestSupport.allocate;
import static io.virtio4j.core.RingTestSupport.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Sizes and offsets of the split layout (virtqueue.md 2.1, 2.2) against hand-computed numbers, and byte order. */
class LayoutTest {
    private Arena arena;

    @BeforeEach
    void openArena() {
        arena = Arena.ofConfined();
    }

    @AfterEach
    void closeArena() {
        arena.close();
    }

    @ParameterizedTest(name = "qsz {0}")
    @CsvSource({
            // qsz,  desc table, avail ring, used ring, used_event, avail_event
            "1,      16,         8,          14,        6,          12",
            "2,      32,         10,         22,        8,          20",
            "256,    4096,       518,        2054,      516,        2052",
            "1024,   16384,      2054,       8198,      2052,       8196",
            "32768,  524288,     65542,      262150,    65540,      262148",
    })
    void areaSizesAndEventFieldOffsets(int qsz, long desc, long avail, long used, long usedEvent, long availEvent) {
        assertEquals(desc, SplitLayout.descTableBytes(qsz));
        assertEquals(avail, SplitLayout.availRingBytes(qsz));
        assertEquals(used, SplitLayout.usedRingBytes(qsz));
        assertEquals(usedEvent, SplitLayout.usedEventOffset(qsz));
        assertEquals(availEvent, SplitLayout.availEventOffset(qsz));
    }

    @ParameterizedTest(name = "entry {0}")
    @CsvSource({
            // i,     desc[i],  avail.ring[i], used.ring[i]
            "0,       0,        4,             4",
            "1,       16,       6,             12",
            "255,     4080,     514,           2044",
            "1023,    16368,    2050,          8188",
            "32767,   524272,   65538,         262140",
    })
    void entryOffsets(int i, long desc, long availEntry, long usedElem) {
        assertEquals(desc, SplitLayout.descOffset(i));
        assertEquals(availEntry, SplitLayout.availEntryOffset(i));
        assertEquals(usedElem, SplitLayout.usedElemOffset(i));
    }

    @ParameterizedTest(name = "qsz {0} align {1}")
    @CsvSource({
            // qsz, align, used offset, total (Linux vring_size)
            "256,   4096,  8192,        10246",
            "1024,  4096,  20480,       28678",
            "1,     4096,  4096,        4110",
            "256,   64,    4672,        6726",
    })
    void legacyContiguousLayout(int qsz, long align, long usedOffset, long total) {
        assertEquals(usedOffset, SplitLayout.legacyUsedOffset(qsz, align));
        assertEquals(total, SplitLayout.legacyTotalBytes(qsz, align));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 3, 6, 65535, 65536, 32769, 49152, -1, -32768, Integer.MIN_VALUE})
    void invalidQueueSizesAreRejected(int qsz) {
        assertFalse(SplitLayout.isValidQueueSize(qsz));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 4, 8, 256, 1024, 16384, 32768})
    void powersOfTwoUpTo32768AreValid(int qsz) {
        assertTrue(SplitLayout.isValidQueueSize(qsz));
    }

    @Test
    void carveLaysTheAreasOutContiguouslyWithTheUsedRingOnItsOwnCacheLine() {
        // qsz 8: desc 128 bytes, avail 22 bytes (128..150), used ring rounded up to 192, 70 bytes
        assertEquals(262, SplitRingAreas.contiguousBytes(8));
        assertEquals(6726, SplitRingAreas.contiguousBytes(256));
        MemorySegment seg = allocate(arena, 262);
        SplitRingAreas areas = SplitRingAreas.carve(seg, 8);
        assertEquals(0, areas.descTable().address() - seg.address());
        assertEquals(128, areas.descTable().byteSize());
        assertEquals(128, areas.availRing().address() - seg.address());
        assertEquals(22, areas.availRing().byteSize());
        assertEquals(192, areas.usedRing().address() - seg.address());
        assertEquals(70, areas.usedRing().byteSize());
    }

    @Test
    void ringAreasRejectBadSizesAndAlignment() {
        MemorySegment seg = allocate(arena, 4096);
        assertThrows(IllegalArgumentException.class,
                () -> new SplitRingAreas(3, seg.asSlice(0, 48), seg.asSlice(1024, 12), seg.asSlice(2048, 30)));
        assertThrows(IllegalArgumentException.class, // descriptor table one byte short
                () -> new SplitRingAreas(8, seg.asSlice(0, 127), seg.asSlice(1024, 22), seg.asSlice(2048, 70)));
        assertThrows(IllegalArgumentException.class, // descriptor table only 8-byte aligned
                () -> new SplitRingAreas(8, seg.asSlice(8, 128), seg.asSlice(1024, 22), seg.asSlice(2048, 70)));
        assertThrows(IllegalArgumentException.class, // available ring one byte short
                () -> new SplitRingAreas(8, seg.asSlice(0, 128), seg.asSlice(1024, 21), seg.asSlice(2048, 70)));
        assertThrows(IllegalArgumentException.class, // available ring odd address
                () -> new SplitRingAreas(8, seg.asSlice(0, 128), seg.asSlice(1025, 22), seg.asSlice(2048, 70)));
        assertThrows(IllegalArgumentException.class, // used ring only 2-byte aligned
                () -> new SplitRingAreas(8, seg.asSlice(0, 128), seg.asSlice(1024, 22), seg.asSlice(2050, 70)));
        assertThrows(IllegalArgumentException.class, // used ring one byte short
                () -> new SplitRingAreas(8, seg.asSlice(0, 128), seg.asSlice(1024, 22), seg.asSlice(2048, 69)));
        // the minimum sizes and alignments are accepted
        new SplitRingAreas(8, seg.asSlice(16, 128), seg.asSlice(1026, 22), seg.asSlice(2052, 70));
    }

    @Test
    void availRingFieldsAreLittleEndianAtTheirOffsets() {
        MemorySegment seg = allocate(arena, 64);
        AvailRing ring = new AvailRing(seg.asSlice(0, SplitLayout.availRingBytes(4)), 4);
        ring.flagsRelease(0xABCD);
        ring.idxRelease(0x1234);
        ring.entry(0, 0x0102);
        ring.entry(3, 0xBEEF);
        ring.usedEventRelease(0xCAFE);

        byte[] expected = new byte[64];
        System.arraycopy(bytes(
                0xCD, 0xAB,             // flags
                0x34, 0x12,             // idx
                0x02, 0x01,             // ring[0]
                0, 0, 0, 0,             // ring[1], ring[2]
                0xEF, 0xBE,             // ring[3]
                0xFE, 0xCA), 0, expected, 0, 14); // used_event at 4 + 2 * 4
        assertArrayEquals(expected, bytes(seg, 0, 64));

        assertEquals(0xABCD, ring.flagsAcquire());
        assertEquals(0x1234, ring.idxAcquire());
        assertEquals(0xBEEF, ring.entry(3), "entries read back unsigned");
        assertEquals(0xCAFE, ring.usedEventAcquire());
    }

    @Test
    void availRingReadsRawLittleEndianBytes() {
        MemorySegment seg = allocate(arena, SplitLayout.availRingBytes(2));
        seg.set(ValueLayout.JAVA_BYTE, 2, (byte) 0x01);
        seg.set(ValueLayout.JAVA_BYTE, 3, (byte) 0x80);
        seg.set(ValueLayout.JAVA_BYTE, 6, (byte) 0xFF);
        seg.set(ValueLayout.JAVA_BYTE, 7, (byte) 0xFF);
        AvailRing ring = new AvailRing(seg, 2);
        assertEquals(0x8001, ring.idxAcquire());
        assertEquals(0xFFFF, ring.entry(1));
    }

    @Test
    void usedRingFieldsAreLittleEndianAtTheirOffsets() {
        MemorySegment seg = allocate(arena, 64);
        UsedRing ring = new UsedRing(seg.asSlice(0, SplitLayout.usedRingBytes(4)), 4);
        ring.flagsRelease(0x0001);
        ring.idxRelease(0xFFFE);
        ring.elem(1, 0x01020304, 0x0A0B0C0D);
        ring.elem(3, -1, 0x80000000);
        ring.availEventRelease(0x1357);

        byte[] expected = new byte[64];
        System.arraycopy(bytes(
                0x01, 0x00,                                     // flags
                0xFE, 0xFF,                                     // idx
                0, 0, 0, 0, 0, 0, 0, 0,                         // ring[0] at 4
                0x04, 0x03, 0x02, 0x01, 0x0D, 0x0C, 0x0B, 0x0A, // ring[1] at 12: id, len
                0, 0, 0, 0, 0, 0, 0, 0,                         // ring[2] at 20
                0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x80, // ring[3] at 28
                0x57, 0x13), 0, expected, 0, 38);               // avail_event at 4 + 8 * 4
        assertArrayEquals(expected, bytes(seg, 0, 64));

        assertEquals(1, ring.flagsAcquire());
        assertEquals(0xFFFE, ring.idxAcquire());
        assertEquals(0x01020304, ring.elemId(1));
        assertEquals(0x0A0B0C0DL, ring.elemLen(1));
        assertEquals(-1, ring.elemId(3), "id is the raw 32-bit value");
        assertEquals(0x80000000L, ring.elemLen(3), "len reads back unsigned");
        assertEquals(0x1357, ring.availEventAcquire());
    }

    @Test
    void descriptorFieldsAreLittleEndianAtTheirOffsets() {
        MemorySegment seg = allocate(arena, 64);
        Descriptors.write(seg, 0, 2, 0x1122334455667788L, 0x99AABBCC, 0x0007, 0xDDEE);

        byte[] expected = new byte[64];
        System.arraycopy(bytes(
                0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // addr at 32
                0xCC, 0xBB, 0xAA, 0x99,                         // len at 40
                0x07, 0x00,                                     // flags at 44
                0xEE, 0xDD), 0, expected, 32, 16);              // next at 46
        assertArrayEquals(expected, bytes(seg, 0, 64));

        assertEquals(0x1122334455667788L, Descriptors.addr(seg, 0, 2));
        assertEquals(0x99AABBCCL, Descriptors.len(seg, 0, 2), "len reads back unsigned");
        assertEquals(7, Descriptors.flags(seg, 0, 2));
        assertEquals(0xDDEE, Descriptors.next(seg, 0, 2));
    }

    @Test
    void descriptorsWorkAtAnUnalignedTableBase() {
        MemorySegment seg = allocate(arena, 64);
        Descriptors.write(seg, 3, 1, 0x0102030405060708L, 16, 0x0002, 5);
        assertArrayEquals(bytes(0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 16, 0, 0, 0, 2, 0, 5, 0),
                bytes(seg, 19, 16));
        assertEquals(0x0102030405060708L, Descriptors.addr(seg, 3, 1));
        assertEquals(16, Descriptors.len(seg, 3, 1));
        assertEquals(2, Descriptors.flags(seg, 3, 1));
        assertEquals(5, Descriptors.next(seg, 3, 1));
    }
}
