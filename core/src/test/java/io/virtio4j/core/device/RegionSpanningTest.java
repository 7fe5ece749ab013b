package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport;
import io.virtio4j.core.RingTestSupport.CountingNotifier;
import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.error.ChainTooLongException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.GuestMemory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A descriptor whose buffer crosses from one guest memory region into the next, adjacent in guest-physical space
 * but mapped apart here (as a front-end's memory table may cut guest RAM), is split into one element per region,
 * in both ring formats and inside indirect tables; an indirect table that crosses regions, and a buffer that runs
 * into a gap, are still refused, and so is a chain whose pieces overflow the chain's capacity.
 */
class RegionSpanningTest {
    private static final int QSZ = 8;
    /** Region 0, guest [0, 64 KiB): the ring, indirect tables and some data. */
    private static final long LOW = 64 * 1024;
    /** Regions 1.. each {@link #PIECE} bytes, one after the other from guest address LOW, each its own allocation. */
    private static final long PIECE = 4096;
    private static final long TABLES = 32 * 1024;

    private final Arena arena = Arena.ofConfined();
    private MemorySegment low;
    private MemorySegment[] pieces;
    private GuestMemory guest;
    private DeviceQueue device;
    private RingFormat format;
    // split
    private SplitRingAreas split;
    private AvailRing avail;
    private int availIdx;
    // packed
    private PackedRingAreas packed;
    private int nextSlot;

    @AfterEach
    void close() {
        arena.close();
    }

    /** Guest memory of region 0 and {@code n} adjacent regions after it, each its own native allocation. */
    private void open(RingFormat f, int n) {
        format = f;
        low = RingTestSupport.allocate(arena, LOW);
        GuestMemory.Builder b = GuestMemory.builder().region(0, low);
        pieces = new MemorySegment[n];
        for (int i = 0; i < n; i++) {
            pieces[i] = RingTestSupport.allocate(arena, PIECE);
            b.region(LOW + i * PIECE, pieces[i]);
        }
        guest = b.build();
        // a pattern over the whole guest-physical space, written through each region's own segment
        for (long a = 0; a < LOW + n * PIECE; a++) {
            byteAt(a).set(ValueLayout.JAVA_BYTE, offsetOf(a), pattern(a));
        }
        DeviceOptions options = DeviceOptions.defaults().withIndirectDesc(true);
        if (f == RingFormat.SPLIT) {
            split = SplitRingAreas.carve(low, QSZ);
            avail = new AvailRing(split.availRing(), QSZ);
            device = DeviceQueue.over(split, guest, options, new CountingNotifier());
        } else {
            packed = PackedRingAreas.carve(low, QSZ);
            device = DeviceQueue.over(packed, guest, options, new CountingNotifier());
        }
    }

    private static byte pattern(long a) {
        return (byte) (a * 13 + (a >>> 8));
    }

    private MemorySegment byteAt(long a) {
        return a < LOW ? low : pieces[(int) ((a - LOW) / PIECE)];
    }

    private static long offsetOf(long a) {
        return a < LOW ? a : (a - LOW) % PIECE;
    }

    /** Makes one buffer available: {@code descs} as (addr, len, writable, indirect) in chain order, id 0. */
    private void offer(long[][] descs) {
        if (format == RingFormat.SPLIT) {
            for (int i = 0; i < descs.length; i++) {
                int flags = (descs[i][2] != 0 ? SplitLayout.DESC_F_WRITE : 0)
                        | (descs[i][3] != 0 ? SplitLayout.DESC_F_INDIRECT : 0)
                        | (i + 1 < descs.length ? SplitLayout.DESC_F_NEXT : 0);
                Descriptors.write(split.descTable(), 0, i, descs[i][0], (int) descs[i][1], flags, i + 1);
            }
            avail.entry(availIdx & (QSZ - 1), 0);
            avail.idxRelease(++availIdx);
        } else {
            int first = nextSlot;
            int firstFlags = 0;
            for (int i = 0; i < descs.length; i++) {
                int flags = PackedLayout.DESC_F_AVAIL
                        | (descs[i][2] != 0 ? PackedLayout.DESC_F_WRITE : 0)
                        | (descs[i][3] != 0 ? PackedLayout.DESC_F_INDIRECT : 0)
                        | (i + 1 < descs.length ? PackedLayout.DESC_F_NEXT : 0);
                PackedDescriptors.write(packed.descRing(), nextSlot, descs[i][0], (int) descs[i][1], 0);
                if (i == 0) {
                    firstFlags = flags;
                } else {
                    PackedDescriptors.flagsPlain(packed.descRing(), nextSlot, flags);
                }
                nextSlot++;
            }
            PackedDescriptors.flagsRelease(packed.descRing(), first, firstFlags); // the head last, as a driver does
        }
    }

    /** Writes entry {@code i} of an indirect table at guest address {@code table} (in region 0). */
    private void indirect(long table, int i, long addr, int len, boolean writable, boolean last) {
        if (format == RingFormat.SPLIT) {
            Descriptors.write(low, table, i, addr, len,
                    (writable ? SplitLayout.DESC_F_WRITE : 0) | (last ? 0 : SplitLayout.DESC_F_NEXT), i + 1);
        } else {
            PackedDescriptors.indirectWrite(low, table, i, addr, len, writable ? PackedLayout.DESC_F_WRITE : 0);
        }
    }

    private static long[] r(long addr, long len) {
        return new long[] {addr, len, 0, 0};
    }

    private static long[] w(long addr, long len) {
        return new long[] {addr, len, 1, 0};
    }

    private static long[] table(long addr, long len) {
        return new long[] {addr, len, 0, 1};
    }

    private static byte[] expected(long addr, int len) {
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) {
            b[i] = pattern(addr + i);
        }
        return b;
    }

    private static <T extends RingViolationException> T assertBroken(DeviceQueue q, Class<T> type, String field) {
        T e = assertThrows(type, q::pop);
        assertEquals(field, e.field(), e.getMessage());
        assertTrue(q.isBroken());
        return e;
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aReadableDescriptorAcrossARegionBoundaryIsTwoElementsWithTheGuestBytesInOrder(RingFormat f) {
        open(f, 1);
        offer(new long[][] {r(LOW - 100, 300), w(0x1000, 16)});
        DescriptorChain c = device.pop();
        assertEquals(3, c.count());
        assertEquals(2, c.readableCount(), "the split descriptor's pieces are both readable");
        assertEquals(300, c.readableBytes());
        assertSame(low, c.region(0));
        assertEquals(LOW - 100, c.offset(0));
        assertEquals(100, c.length(0));
        assertSame(pieces[0], c.region(1));
        assertEquals(0, c.offset(1));
        assertEquals(200, c.length(1));
        MemorySegment copy = arena.allocate(300);
        assertEquals(300, c.gather(0, copy, 0, 300));
        assertArrayEquals(expected(LOW - 100, 300), copy.toArray(ValueLayout.JAVA_BYTE));
        device.pushUsed(c.head(), 0);
        device.flushUsed();
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aWritableDescriptorAcrossTwoBoundariesTakesTheWritesInEachRegion(RingFormat f) {
        open(f, 3);
        offer(new long[][] {r(0x1000, 16), w(LOW + PIECE - 10, (int) PIECE + 20)});
        DescriptorChain c = device.pop();
        assertEquals(4, c.count(), "one readable element, and the writable one in three pieces");
        assertEquals(PIECE + 20, c.writableBytes());
        byte[] data = new byte[(int) PIECE + 20];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 7 + 1);
        }
        assertEquals(data.length, c.scatter(0, MemorySegment.ofArray(data), 0, data.length));
        for (int i = 0; i < data.length; i++) {
            long a = LOW + PIECE - 10 + i;
            assertEquals(data[i], byteAt(a).get(ValueLayout.JAVA_BYTE, offsetOf(a)), "guest byte 0x" + Long.toHexString(a));
        }
        assertEquals(pattern(LOW + 2 * PIECE + 10), pieces[2].get(ValueLayout.JAVA_BYTE, 10), "nothing past the element");
        device.pushUsed(c.head(), data.length);
        device.flushUsed();
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void anIndirectEntryAcrossABoundaryIsSplitToo(RingFormat f) {
        open(f, 2);
        indirect(TABLES, 0, 0x2000, 16, false, false);
        indirect(TABLES, 1, LOW + PIECE - 1, 2, true, true);
        offer(new long[][] {table(TABLES, 32)});
        DescriptorChain c = device.pop();
        assertEquals(3, c.count());
        assertEquals(2, c.writableBytes());
        assertSame(pieces[0], c.region(1));
        assertEquals(PIECE - 1, c.offset(1));
        assertSame(pieces[1], c.region(2));
        assertEquals(0, c.offset(2));
    }

    /**
     * The indirect table's bound (no more descriptors than the queue size, direct ones included) counts descriptors,
     * not the pieces they were split into: a direct header across a boundary (two pieces) before a table of
     * QSZ - 1 descriptors is a chain of QSZ descriptors, and legal (split only: a packed chain has no direct prefix
     * before an indirect descriptor in what the bound counts).
     */
    @Test
    void aSplitDirectPrefixAcrossABoundaryDoesNotShrinkTheIndirectTablesBound() {
        open(RingFormat.SPLIT, 1);
        int entries = QSZ - 1;
        for (int i = 0; i < entries; i++) {
            boolean last = i == entries - 1;
            indirect(TABLES, i, 0x2000 + 16L * i, 16, last, last);
        }
        offer(new long[][] {r(LOW - 8, 16), table(TABLES, 16L * entries)});
        DescriptorChain c = device.pop();
        assertEquals(2 + entries, c.count(), "the header's two pieces and the table's entries");
        assertEquals(16 + 16L * (entries - 1), c.readableBytes());
        assertEquals(16, c.writableBytes());
        device.pushUsed(c.head(), 16);
        device.flushUsed();
    }

    /** The table itself is read in place (zero copy): it must lie in one region, split or not (a documented limit). */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void anIndirectTableAcrossABoundaryIsRefused(RingFormat f) {
        open(f, 1);
        offer(new long[][] {table(LOW - 16, 32)});
        assertBroken(device, AddressOutOfRangeException.class, "desc[0].addr");
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aBufferRunningIntoAGapIsRefused(RingFormat f) {
        open(f, 1);
        long end = LOW + PIECE; // nothing is mapped from here
        offer(new long[][] {r(0x1000, 16), w(end - 8, 16)});
        AddressOutOfRangeException e = assertBroken(device, AddressOutOfRangeException.class, "desc[1].addr");
        assertTrue(e.getMessage().contains("not covered"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aBufferWrappingTheAddressSpaceIsRefusedAsAnOverflow(RingFormat f) {
        open(f, 1);
        offer(new long[][] {r(-16, 32)});
        AddressOutOfRangeException e = assertBroken(device, AddressOutOfRangeException.class, "desc[0].addr");
        assertTrue(e.getMessage().contains("overflows"), e.getMessage());
    }

    /** Capacity is twice the queue size: a full-length chain whose every descriptor crosses two boundaries is not. */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void piecesBeyondTheChainsCapacityBreakTheQueue(RingFormat f) {
        open(f, 3);
        long[][] descs = new long[QSZ][];
        for (int i = 0; i < QSZ; i++) {
            descs[i] = r(LOW + PIECE - 1, (int) PIECE + 2); // three pieces each
        }
        offer(descs);
        ChainTooLongException e = assertBroken(device, ChainTooLongException.class, "desc[5].addr");
        assertTrue(e.getMessage().contains("" + 2 * QSZ), e.getMessage());
    }
}
