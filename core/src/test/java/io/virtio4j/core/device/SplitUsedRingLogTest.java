package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.CountingNotifier;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.error.QueueBrokenException;
import io.virtio4j.core.layout.AvailRing;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.virtio4j.core.layout.SplitLayout.DESC_F_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A split device queue logging its used ring: each publication marks the used ring's page(s) at the log address it
 * was given (not where the ring lies in the queue's memory), nothing else (buffer data is the device's to mark);
 * without a log nothing is marked; a log address past the log breaks the queue with the named exception.
 */
class SplitUsedRingLogTest {
    private static final int QUEUE = 8;
    /** Guest memory: the ring in page 0, data from page 4. */
    private static final long DATA = 4 * DirtyLog.PAGE_SIZE;
    /** Where the front-end says the used ring is for the log: a page of its own, not the ring's page 0. */
    private static final long LOG_ADDR = 9 * DirtyLog.PAGE_SIZE + 0x40;

    private Arena arena;
    private SplitRingAreas areas;
    private DeviceQueue device;
    private MemorySegment raw;
    private DirtyLog log;

    @BeforeEach
    void setUp() {
        arena = Arena.ofConfined();
        MemorySegment memory = arena.allocate(8 * DirtyLog.PAGE_SIZE, 4096);
        areas = SplitRingAreas.carve(memory.asSlice(0, DATA), QUEUE);
        device = DeviceQueue.over(areas, GuestMemory.of(memory, 0), DeviceOptions.defaults(), new CountingNotifier());
        raw = arena.allocate(8, 8);
        log = new DirtyLog(raw, 0, 2); // 16 pages
    }

    @AfterEach
    void tearDown() {
        arena.close();
    }

    private void offer(int slot, int head) {
        Descriptors.write(areas.descTable(), 0, head, DATA + head * 256L, 256, DESC_F_WRITE, 0);
        AvailRing avail = new AvailRing(areas.availRing(), QUEUE);
        avail.entry(slot, head);
        avail.idxRelease(slot + 1);
    }

    private long marked() {
        return raw.get(java.lang.foreign.ValueLayout.JAVA_SHORT, 0) & 0xFFFFL;
    }

    @Test
    void aPublicationMarksTheUsedRingsPageAtItsLogAddressOnly() {
        device.logUsed(log, LOG_ADDR, -1);
        offer(0, 0);
        DescriptorChain c = device.pop();
        assertEquals(0, marked(), "a pop writes nothing into the used ring");
        device.pushUsed(c.head(), 10);
        device.publishUsed();
        assertEquals(1L << 9, marked(), "the used ring's page as the front-end placed it: page 9");
        assertTrue(LOG_ADDR + SplitLayout.usedRingBytes(QUEUE) < 10 * DirtyLog.PAGE_SIZE, "the ring fits page 9");
    }

    @Test
    void aRingAcrossAPageBoundaryMarksBothPages() {
        // the used ring straddles pages 9 and 10: flags, idx and slots 0..5 in page 9, slots 6 and 7 in page 10
        long straddling = 10 * DirtyLog.PAGE_SIZE - 4 - 8 * 6;
        device.logUsed(log, straddling, -1);
        for (int i = 0; i < QUEUE; i++) {
            offer(i, i);
            device.pushUsed(device.pop().head(), 0);
        }
        assertEquals(0, marked(), "nothing is marked before the publication");
        device.publishUsed();
        assertEquals((1L << 9) | (1L << 10), marked());
    }

    @Test
    void withoutALogNothingIsMarked() {
        device.logUsed(log, LOG_ADDR, -1);
        device.logUsed(null, 0, 0);
        offer(0, 0);
        device.pushUsed(device.pop().head(), 10);
        device.publishUsed();
        device.enableKicksOrFindPending();
        device.disableKicks();
        assertEquals(0, marked());
    }

    @Test
    void aLogAddressPastTheLogBreaksTheQueueNamingTheLog() {
        device.logUsed(log, 16 * DirtyLog.PAGE_SIZE, -1); // page 16: the log has pages [0, 16)
        offer(0, 0);
        device.pushUsed(device.pop().head(), 10);
        DirtyLogOverflowException e = assertThrows(DirtyLogOverflowException.class, device::publishUsed);
        assertEquals("log", e.field());
        assertEquals(16, e.value());
        assertTrue(device.isBroken());
        assertInstanceOf(DirtyLogOverflowException.class, device.violation());
        assertThrows(QueueBrokenException.class, device::pop);
        assertEquals(0, marked());
    }
}
