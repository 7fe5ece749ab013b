package io.virtio4j.core.device;

import io.virtio4j.core.error.ChainTooLargeException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.layout.UsedRing;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.RingTestSupport.CountingNotifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static io.virtio4j.core.layout.SplitLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.SplitLayout.DESC_F_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chains at and past the spec's 2^32-byte bound. Elements that large need guest memory that large: a sparse file
 * mapped into one segment, of which only the pages the ring occupies are ever touched (the device never reads
 * the elements' bytes here).
 */
class ChainTotalLengthTest {
    private static final int QUEUE = 8;
    /** Guest address of the (huge, overlapping) elements. */
    private static final long DATA = 64 * 1024;
    private static final long GUEST_BYTES = DATA + (1L << 32);

    private Path file;
    private Arena arena;
    private SplitRingAreas areas;
    private DeviceQueue device;
    private UsedRing used;

    @BeforeEach
    void map() throws IOException {
        file = Files.createTempFile("virtio4j-sparse", ".mem");
        arena = Arena.ofConfined();
        MemorySegment memory;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            memory = ch.map(FileChannel.MapMode.READ_WRITE, 0, GUEST_BYTES, arena);
        }
        areas = SplitRingAreas.carve(memory.asSlice(0, DATA), QUEUE);
        used = new UsedRing(areas.usedRing(), QUEUE);
        device = DeviceQueue.over(areas, GuestMemory.of(memory, 0), DeviceOptions.defaults(), new CountingNotifier());
    }

    @AfterEach
    void unmap() throws IOException {
        arena.close();
        Files.deleteIfExists(file);
    }

    /** Makes the chain {desc[0], desc[1]} available with the two lengths (as unsigned 32-bit values). */
    private void chainOfTwo(int len0, int flags0, int len1, int flags1) {
        Descriptors.write(areas.descTable(), 0, 0, DATA, len0, flags0 | DESC_F_NEXT, 1);
        Descriptors.write(areas.descTable(), 0, 1, DATA, len1, flags1, 0);
        AvailRing avail = new AvailRing(areas.availRing(), QUEUE);
        avail.entry(0, 0);
        avail.idxRelease(1);
    }

    @Test
    void aChainOfMoreThan2To32BytesIsRejectedAtPop() {
        chainOfTwo(0xFFFF_FFF0, 0, 0x20, DESC_F_WRITE);
        ChainTooLargeException e = assertThrows(ChainTooLargeException.class, device::pop);
        assertEquals("desc[1].len", e.field());
        assertEquals(0x20, e.value());
        assertTrue(e.getMessage().contains(Long.toString((1L << 32) + 0x10)), e.getMessage());
        assertTrue(device.isBroken());
        assertThrows(QueueBrokenException.class, device::pop);
    }

    @Test
    void aWritablePartOfExactly2To32BytesIsReportedWithoutTruncation() {
        chainOfTwo(0x8000_0000, DESC_F_WRITE, 0x8000_0000, DESC_F_WRITE);
        DescriptorChain chain = device.pop();
        assertEquals(1L << 32, chain.writableBytes(), "2^32 bytes is the most the spec allows, and allowed");
        int head = chain.head();
        assertThrows(IllegalArgumentException.class, () -> device.pushUsed(head, 1L << 32),
                "2^32 does not fit used.len and would read as 0");
        device.pushUsed(head, 0xFFFF_FFFFL);
        device.publishUsed();
        assertEquals(0xFFFF_FFFFL, used.elemLen(0));
    }
}
