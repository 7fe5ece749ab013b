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
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.os.Poll;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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
    private static final long HANG_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
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
    private final long features;
    private final GuestMemory guest;
    /** Where the device's guest memory is cut into two regions (the first cut of several), or 0 when it is one. */
    private final long boundary;
    /** The size of each region after the first, when the data area is cut into several. */
    private final long regionBytes;
    private long next;
    private int tokens;
    private Poll completionPoll;

    BlkRig(RingFormat format, BlockStore store, BlockIo io, long features) {
        this(format, store, io, features, false);
    }

    /**
     * With {@code twoRegions}, the device sees the guest memory as a vhost-user back-end sees a front-end's table of
     * two adjacent regions: two mappings of one memfd, cut at {@link #boundary()} in the data area, each at its own
     * address here; the driver writes through a third mapping of it all. A buffer across the boundary then reaches
     * the device as two elements in different mappings.
     */
    BlkRig(RingFormat format, BlockStore store, BlockIo io, long features, boolean twoRegions) {
        this(format, store, io, features, QSZ, twoRegions ? 2 : 1);
    }

    /**
     * The same with a ring of {@code queueSize} and the data area cut into {@code regions} equal parts (a power of
     * two), each its own mapping: the first region holds the ring too; cut k is at {@link #boundary(int)}.
     */
    BlkRig(RingFormat format, BlockStore store, BlockIo io, long features, int queueSize, int regions) {
        this.io = io;
        RingSegment ring;
        GuestMemory guest;
        if (regions > 1) {
            long bytes = RingSegment.bytes(format, queueSize, 4096, DATA_BYTES);
            try (FileDescriptor fd = Memfd.create("blk-rig", bytes)) { // the mappings outlive the fd
                ring = RingSegment.carve(Mmap.mapShared(fd, 0, bytes, arena), format, queueSize, 4096);
                regionBytes = DATA_BYTES / regions;
                boundary = ring.dataOffset() + regionBytes * (regions / 2);
                long first = ring.dataOffset() + regionBytes;
                GuestMemory.Builder b = GuestMemory.builder().region(0, Mmap.mapSharedNoReserve(fd, 0, first, arena));
                for (long at = first; at < bytes; at += regionBytes) {
                    long n = Math.min(regionBytes, bytes - at);
                    b.region(at, Mmap.mapSharedNoReserve(fd, at, n, arena));
                }
                guest = b.build();
            }
        } else {
            ring = RingSegment.allocate(arena, format, queueSize, 4096, DATA_BYTES);
            boundary = 0;
            regionBytes = 0;
            guest = ring.guestMemory();
        }
        mem = ring.segment();
        dataBase = ring.dataOffset();
        next = dataBase;
        driver = DriverQueue.over(ring.areas(), DriverOptions.defaults(), new ParkingNotifier());
        device = DeviceQueue.over(ring.areas(), guest, new DeviceOptions(Ordering.WEAK, true, false, false,
                false), new ParkingNotifier());
        requests = new BlkRequests(0, arena, io, cache, store.readOnly(), store.size(), store.blockSize(),
                "test-serial".getBytes(), stats);
        requests.attach(device, features, null, guest);
        this.features = features;
        this.guest = guest;
    }

    /** The device marks what it writes into guest memory in {@code log} from now on (null: no longer). */
    void log(io.virtio4j.core.memory.DirtyLog log) {
        requests.attach(device, features, log, guest);
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

    /** Where the device's two regions meet (see the two-region constructor). */
    long boundary() {
        return boundary;
    }

    /** Where region k (from 1) of a data area cut into several begins (see the several-region constructor). */
    long boundary(int k) {
        return dataBase + k * regionBytes;
    }

    /**
     * {@code n} bytes of guest memory of which the first {@code before} lie below {@link #boundary()} and the rest
     * above it, filled with 0xEE; the bump allocator moves past them.
     */
    long allocAcross(long before, long n) {
        long at = boundary - before;
        if (boundary == 0 || at < next || before <= 0 || before >= n) {
            throw new IllegalStateException("cannot place " + n + " bytes " + before + " before the boundary 0x"
                    + Long.toHexString(boundary) + " (next free 0x" + Long.toHexString(next) + ")");
        }
        next = at;
        return alloc(n);
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

    /**
     * Runs device passes until {@code expected} buffers came back; returns token to used length. While the engine
     * holds operations and a pass finished none, waits for its completion eventfd (an asynchronous engine), read
     * before the next pass reaps, as a queue thread does.
     */
    Map<Integer, Long> serve(int expected) {
        Map<Integer, Long> used = new HashMap<>();
        long deadline = System.nanoTime() + HANG_NANOS; // a hang guard, not a timing assertion
        for (int idle = 0; idle < 10_000 && used.size() < expected && System.nanoTime() - deadline < 0; ) {
            int n = requests.pass(16);
            Object t;
            while ((t = driver.pollUsed()) != null) {
                assertNull(used.put((Integer) t, driver.lastUsedLength()), "buffer " + t + " came back twice");
            }
            if (n > 0) {
                idle = 0;
            } else if (io.inFlight() > 0) {
                awaitCompletion();
            } else {
                idle++; // nothing in flight and nothing done: the buffers are not coming
            }
        }
        assertEquals(expected, used.size(), "buffers back");
        requests.pass(16);
        assertNull(driver.pollUsed(), "no buffer came back that was not made available");
        return used;
    }

    /** Waits a little for the engine to finish something (its eventfd), or spins once when it has none. */
    private void awaitCompletion() {
        EventFd done = io.completionFd();
        if (done == null) {
            Thread.onSpinWait();
            return;
        }
        if (completionPoll == null) {
            completionPoll = new Poll(done.fileDescriptor(), Poll.POLLIN);
        }
        completionPoll.await(POLL_NANOS);
        done.tryRead();
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
