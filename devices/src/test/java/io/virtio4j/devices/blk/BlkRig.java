package io.virtio4j.devices.blk;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.devices.blk.io.BlockIo;
import io.virtio4j.devices.blk.io.BlockStore;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A driver queue and a blk device's {@link BlkRequests} over one ring in one process (guest address = offset of
 * {@link #mem}): the test plays the driver, building requests of any shape, hostile ones included, and drives the
 * device's passes on its own thread.
 */
final class BlkRig implements AutoCloseable {
    static final int QSZ = 64;
    static final long DATA_BYTES = 8L << 20;
    static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** FLUSH and CONFIG_WCE (writeback cache, no write-through flushes), DISCARD, WRITE_ZEROES. */
    static final long WRITEBACK_FEATURES = BlkLayout.bit(BlkLayout.F_FLUSH) | BlkLayout.bit(BlkLayout.F_DISCARD)
            | BlkLayout.bit(BlkLayout.F_WRITE_ZEROES);

    final Arena arena = Arena.ofConfined();
    final MemorySegment mem;
    final DriverQueue driver;
    final DeviceQueue device;
    final BlkStats stats = new BlkStats();
    final WriteCache cache = new WriteCache();
    final BlkRequests requests;
    final BlockIo io;
    private final long dataBase;
    private long next;
    private int tokens;

    BlkRig(RingFormat format, BlockStore store, BlockIo io, long features) {
        this.io = io;
        RingSegment ring = RingSegment.allocate(arena, format, QSZ, 4096, DATA_BYTES);
        mem = ring.segment();
        dataBase = ring.dataOffset();
        next = dataBase;
        driver = DriverQueue.over(ring.areas(), DriverOptions.defaults(), new ParkingNotifier());
        device = DeviceQueue.over(ring.areas(), ring.guestMemory(), new DeviceOptions(Ordering.WEAK, true, false, false,
                false), new ParkingNotifier());
        requests = new BlkRequests(0, arena, io, cache, store.readOnly(), store.size(), store.blockSize(),
                "test-serial".getBytes(), stats);
        requests.attach(device, features);
    }

    /** {@code n} bytes of guest memory, 512-aligned, filled with 0xEE (so untouched bytes show). */
    long alloc(long n) {
        long at = next;
        next = (next + n + 511) & ~511L;
        if (next > dataBase + DATA_BYTES) {
            throw new IllegalStateException("the rig's guest memory is used up");
        }
        mem.asSlice(at, n).fill((byte) 0xEE);
        return at;
    }

    /** A request header in guest memory. */
    long header(int type, long sector) {
        long at = alloc(BlkLayout.HEADER_BYTES);
        mem.set(LE_INT, at + BlkLayout.HEADER_TYPE, type);
        mem.set(LE_INT, at + BlkLayout.HEADER_RESERVED, 0);
        mem.set(LE_LONG, at + BlkLayout.HEADER_SECTOR, sector);
        return at;
    }

    /** A DISCARD / WRITE_ZEROES segment in guest memory. */
    long segment(long sector, int sectors, int flags) {
        long at = alloc(BlkLayout.SEGMENT_BYTES);
        mem.set(LE_LONG, at + BlkLayout.SEGMENT_SECTOR, sector);
        mem.set(LE_INT, at + BlkLayout.SEGMENT_NUM_SECTORS, sectors);
        mem.set(LE_INT, at + BlkLayout.SEGMENT_FLAGS, flags);
        return at;
    }

    /** Makes {@code sg} available; returns its token. */
    int post(ScatterGather sg) {
        int token = tokens++;
        driver.add(sg, token);
        driver.kick();
        return token;
    }

    /** Runs device passes until {@code expected} buffers came back; returns token to used length. */
    Map<Integer, Long> serve(int expected) {
        Map<Integer, Long> used = new HashMap<>();
        for (int round = 0; round < 10_000 && used.size() < expected; round++) {
            requests.pass(16);
            Object t;
            while ((t = driver.pollUsed()) != null) {
                assertNull(used.put((Integer) t, driver.lastUsedLength()), "buffer " + t + " came back twice");
            }
        }
        assertEquals(expected, used.size(), "buffers back");
        requests.pass(16);
        assertNull(driver.pollUsed(), "no buffer came back that was not made available");
        return used;
    }

    /** Posts one request and serves it; returns its used length. */
    long one(ScatterGather sg) {
        int t = post(sg);
        Map<Integer, Long> used = serve(1);
        assertTrue(used.containsKey(t));
        return used.get(t);
    }

    int status(long at) {
        return Byte.toUnsignedInt(mem.get(ValueLayout.JAVA_BYTE, at));
    }

    byte[] bytes(long at, int n) {
        return mem.asSlice(at, n).toArray(ValueLayout.JAVA_BYTE);
    }

    void put(long at, byte[] b) {
        MemorySegment.copy(b, 0, mem, ValueLayout.JAVA_BYTE, at, b.length);
    }

    @Override
    public void close() {
        requests.drain();
        requests.detach();
        io.close();
        arena.close();
    }
}
