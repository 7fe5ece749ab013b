package io.virtio4j.devices.net;

import io.virtio4j.devices.DirtyPages;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.ordering.Ordering;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.BitSet;

import static io.virtio4j.devices.DirtyPages.marked;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What net receive marks in the dirty log: the pages of the bytes each frame put into the guest's buffers (header
 * included), in every buffer a merged frame spans, and not the rest of a buffer the frame did not fill; a buffer
 * in a page the log has no bit for breaks the queue naming {@code log} and is not returned.
 */
class RxDeliveryDirtyLogTest {
    private static final int QSZ = 4;
    /** Receive buffers from page 2 on, two pages apart (guest address = offset in {@link #mem}). */
    private static final long POOL = 2 * DirtyLog.PAGE_SIZE;
    private static final long STRIDE = 2 * DirtyLog.PAGE_SIZE;

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment mem = arena.allocate(POOL + QSZ * STRIDE, 4096);
    private final GuestMemory guest = GuestMemory.of(mem, 0);
    private final SplitRingAreas areas = SplitRingAreas.carve(mem.asSlice(0, POOL), QSZ);
    private final DriverQueue driver = DriverQueue.over(areas, DriverOptions.defaults(), new ParkingNotifier());
    private final DeviceQueue device = DeviceQueue.over(areas, guest,
            new DeviceOptions(Ordering.WEAK, true, false, false, false), new ParkingNotifier());
    private final MemorySegment staging = arena.allocate(NetFeatures.HDR_LEN + 4096, 64);
    private int posted;

    @AfterEach
    void close() {
        arena.close();
    }

    private DirtyLog log(long bytes) {
        return DirtyPages.log(arena, bytes);
    }

    private long post(long at, int len) {
        driver.add(new ScatterGather(1).writable(at, len), posted++);
        driver.kick();
        return at;
    }

    private long stage(int len) {
        staging.fill((byte) 0);
        for (int i = 0; i < len; i++) {
            staging.set(ValueLayout.JAVA_BYTE, NetFeatures.HDR_LEN + i, (byte) i);
        }
        return NetFeatures.HDR_LEN + len;
    }

    @Test
    void aFrameMarksThePagesItFilledNotTheRestOfItsBuffer() {
        DirtyLog log = log(8);
        RxDelivery d = new RxDelivery(device, false, log, guest);
        long at = post(POOL + STRIDE - 200, 8192); // the buffer runs from page 3 well into page 5
        assertEquals(RxDelivery.DELIVERED, d.deliver(staging, stage(100))); // 112 bytes: page 3 only
        BitSet expected = new BitSet();
        expected.set((int) (at >>> DirtyLog.PAGE_SHIFT));
        assertEquals(expected, marked(log));
        device.flushUsed();
        assertEquals(0, driver.pollUsed());
    }

    @Test
    void aMergedFrameMarksEveryBufferItSpans() {
        DirtyLog log = log(8);
        RxDelivery d = new RxDelivery(device, true, log, guest);
        long a = post(POOL, 64);
        long b = post(POOL + STRIDE + 4096 - 32, 64); // across the boundary of pages 5 and 6
        long c = post(POOL + 2 * STRIDE, 64);
        post(POOL + 3 * STRIDE, 64); // not needed: not marked
        assertEquals(RxDelivery.DELIVERED, d.deliver(staging, stage(140))); // 152 bytes: 64 + 64 + 24
        BitSet expected = new BitSet();
        expected.set((int) (a >>> 12));
        expected.set((int) (b >>> 12));
        expected.set((int) ((b + 63) >>> 12));
        expected.set((int) (c >>> 12));
        assertEquals(4, expected.cardinality());
        assertEquals(expected, marked(log));
    }

    @Test
    void aBufferThePageLogDoesNotCoverBreaksTheQueueNamingTheLog() {
        DirtyLog log = log(1); // pages [0, 8)
        RxDelivery d = new RxDelivery(device, false, log, guest);
        long at = post(POOL + 3 * STRIDE, 512); // page 8
        DirtyLogOverflowException e = assertThrows(DirtyLogOverflowException.class, () -> d.deliver(staging, stage(100)));
        assertEquals("log", e.field());
        assertEquals(at >>> 12, e.value());
        assertTrue(device.isBroken());
        assertNull(driver.pollUsed(), "the buffer is not returned");
    }
}
