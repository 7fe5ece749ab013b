package io.virtio4j.devices.net;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.ordering.Ordering;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The rules of {@link RxDelivery}, one test each, on a ring of {@value #QSZ} receive buffers between a driver and
 * the device side in one process.
 */
class RxDeliveryTest {
    private static final int QSZ = 4;
    private static final long POOL = 4096;
    private static final int BUF = 512;
    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment mem = arena.allocate(POOL + (long) QSZ * BUF, 64);
    private final SplitRingAreas areas = SplitRingAreas.carve(mem, QSZ);
    private final DriverQueue driver = DriverQueue.over(areas, DriverOptions.defaults(), new ParkingNotifier());
    private final DeviceQueue device = DeviceQueue.over(areas, GuestMemory.of(mem, 0),
            new DeviceOptions(Ordering.WEAK, true, false, false, false), new ParkingNotifier());
    private final MemorySegment staging = arena.allocate(NetFeatures.HDR_LEN + 4096, 64);
    private int posted;

    @AfterEach
    void close() {
        arena.close();
    }

    /** Posts a receive buffer of {@code len} bytes; its token is its slot in the pool. */
    private int post(int len) {
        int slot = posted++ % QSZ;
        driver.add(new ScatterGather(1).writable(POOL + (long) slot * BUF, len), slot);
        driver.kick();
        return slot;
    }

    /** Stages a frame of {@code len} bytes (byte i = i) behind a header with the given flags and gso_type. */
    private long stage(int len, int flags, int gsoType) {
        staging.set(ValueLayout.JAVA_BYTE, 0, (byte) flags);
        staging.set(ValueLayout.JAVA_BYTE, 1, (byte) gsoType);
        for (int i = 2; i < NetFeatures.HDR_LEN; i++) {
            staging.set(ValueLayout.JAVA_BYTE, i, (byte) 0x5A); // hdr_len, gso_size, csum_*, num_buffers: junk
        }
        for (int i = 0; i < len; i++) {
            staging.set(ValueLayout.JAVA_BYTE, NetFeatures.HDR_LEN + i, (byte) i);
        }
        return NetFeatures.HDR_LEN + len;
    }

    /** Publishes what the device pushed; returns the used lengths of the buffers that came back, in order. */
    private long[] reap(int expectedSlots) {
        device.flushUsed();
        long[] lens = new long[expectedSlots];
        for (int i = 0; i < expectedSlots; i++) {
            Object token = driver.pollUsed();
            assertEquals(i == 0 ? firstSlot : (firstSlot + i) % QSZ, token, "buffer " + i + " in order");
            lens[i] = driver.lastUsedLength();
        }
        assertNull(driver.pollUsed(), "no further buffer came back");
        return lens;
    }

    private int firstSlot;

    private byte[] header(int slot) {
        return mem.asSlice(POOL + (long) slot * BUF, NetFeatures.HDR_LEN).toArray(ValueLayout.JAVA_BYTE);
    }

    private static byte[] headerWith(int numBuffers) {
        byte[] h = new byte[NetFeatures.HDR_LEN];
        h[NetFeatures.HDR_NUM_BUFFERS] = (byte) numBuffers;
        return h;
    }

    private void assertNothingTaken(int availBefore) {
        assertEquals(availBefore, device.state().nextAvail(), "no buffer was taken");
        device.flushUsed();
        assertNull(driver.pollUsed(), "no buffer came back");
    }

    @Test
    void theHeaderIsZeroButNumBuffers() {
        RxDelivery d = new RxDelivery(device, false, null, null);
        firstSlot = post(BUF);
        long total = stage(100, 2 /* DATA_VALID: needs GUEST_CSUM, not offered */, 0);
        assertEquals(RxDelivery.DELIVERED, d.deliver(staging, total));
        assertArrayEquals(new long[] {total}, reap(1));
        assertArrayEquals(headerWith(1), header(firstSlot));
        for (int i = 0; i < 100; i++) {
            assertEquals((byte) i, mem.get(ValueLayout.JAVA_BYTE, POOL + firstSlot * BUF + NetFeatures.HDR_LEN + i));
        }
    }

    @Test
    void aFrameAskingForAnOffloadIsDroppedAndTakesNoBuffer() {
        RxDelivery d = new RxDelivery(device, true, null, null);
        post(BUF);
        assertEquals(RxDelivery.DROPPED, d.deliver(staging, stage(100, 1 /* NEEDS_CSUM */, 0)));
        assertNothingTaken(0);
        assertEquals(RxDelivery.DROPPED, d.deliver(staging, stage(100, 0, 1 /* GSO_TCPV4 */)));
        assertNothingTaken(0);
        assertEquals(RxDelivery.DROPPED, d.deliver(staging, stage(NetFeatures.ETH_HEADER - 1, 0, 0)), "a runt");
        assertNothingTaken(0);
    }

    @Test
    void withoutMergedBuffersATooSmallBufferGoesBackUnused() {
        RxDelivery d = new RxDelivery(device, false, null, null);
        firstSlot = post(64);
        assertEquals(RxDelivery.DROPPED, d.deliver(staging, stage(100, 0, 0)));
        assertNothingTaken(0);
        long total = stage(40, 0, 0);
        assertEquals(RxDelivery.DELIVERED, d.deliver(staging, total), "the same buffer takes a frame that fits");
        assertArrayEquals(new long[] {total}, reap(1));
    }

    @Test
    void withoutMergedBuffersAnEmptyRingMeansWait() {
        RxDelivery d = new RxDelivery(device, false, null, null);
        assertEquals(RxDelivery.NO_BUFFERS, d.deliver(staging, stage(100, 0, 0)));
    }

    @Test
    void mergedBuffersSpanAsManyBuffersAsNeededAndSaySo() {
        RxDelivery d = new RxDelivery(device, true, null, null);
        firstSlot = post(64);
        post(64);
        post(64);
        long total = stage(140, 0, 0); // 152 bytes: 64 + 64 + 24
        assertEquals(RxDelivery.DELIVERED, d.deliver(staging, total));
        assertArrayEquals(new long[] {64, 64, 24}, reap(3));
        assertArrayEquals(headerWith(3), header(firstSlot));
        assertEquals(3, Short.toUnsignedInt(mem.get(LE_SHORT, POOL + firstSlot * BUF + NetFeatures.HDR_NUM_BUFFERS)));
    }

    @Test
    void mergedBuffersNotYetEnoughMeansWaitWithNothingTaken() {
        RxDelivery d = new RxDelivery(device, true, null, null);
        firstSlot = post(64);
        post(64);
        long total = stage(140, 0, 0);
        assertEquals(RxDelivery.NO_BUFFERS, d.deliver(staging, total));
        assertNothingTaken(0);
        post(64);
        stage(140, 0, 0);
        assertEquals(RxDelivery.DELIVERED, d.deliver(staging, total), "once the guest posted a third");
        assertArrayEquals(new long[] {64, 64, 24}, reap(3));
    }

    @Test
    void mergedBuffersAFrameTheWholeRingCannotHoldIsDroppedAndTheBuffersGoBack() {
        RxDelivery d = new RxDelivery(device, true, null, null);
        firstSlot = post(64);
        for (int i = 1; i < QSZ; i++) {
            post(64);
        }
        assertEquals(RxDelivery.DROPPED, d.deliver(staging, stage(300, 0, 0)), "312 bytes > 4 x 64");
        assertNothingTaken(0);
        long total = stage(100, 0, 0);
        assertEquals(RxDelivery.DELIVERED, d.deliver(staging, total));
        assertArrayEquals(new long[] {64, 48}, reap(2));
    }
}
