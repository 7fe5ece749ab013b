package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.blk.BlkConfig;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import static io.virtio4j.devices.blk.BlkLayout.bit;

/**
 * A virtio-blk device for driver tests, on a RAM disk: one polling thread per started queue serves IN, OUT, FLUSH,
 * GET_ID, DISCARD and WRITE_ZEROES as the spec says, and records the longest data element and the most elements
 * a request had (so tests can check the driver kept to SIZE_MAX and SEG_MAX). {@link #forcedStatus} makes it answer
 * every request with that status byte (or, with {@link #NO_STATUS}, write no status and report 0 bytes written),
 * as a broken device would.
 */
final class RamBlkDevice implements VirtioDevice {
    static final int NO_STATUS = 256;
    static final String ID = "ram-blk-test";
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int queues;
    private final long features;
    private final BlkConfig config;
    private final Arena arena = Arena.ofShared();
    final MemorySegment disk;
    private final Thread[] threads;
    private final boolean[] stop;
    volatile int forcedStatus = -1;
    final AtomicInteger longestElement = new AtomicInteger();
    final AtomicInteger mostElements = new AtomicInteger();

    RamBlkDevice(int queues, long capacityBytes, int sizeMax, int segMax, boolean readOnly) {
        this.queues = queues;
        this.features = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
                | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) | VirtioFeatures.bit(VirtioFeatures.RING_PACKED)
                | bit(BlkLayout.F_SIZE_MAX) | bit(BlkLayout.F_SEG_MAX) | bit(BlkLayout.F_BLK_SIZE)
                | bit(BlkLayout.F_FLUSH) | bit(BlkLayout.F_MQ) | bit(BlkLayout.F_DISCARD)
                | bit(BlkLayout.F_WRITE_ZEROES) | (readOnly ? bit(BlkLayout.F_RO) : 0);
        this.config = new BlkConfig(capacityBytes / BlkLayout.SECTOR, sizeMax, segMax, BlkLayout.SECTOR, 0, 0, 1, 0,
                0, queues, 1 << 16, 1, 1, 1 << 16, 1, 1);
        this.disk = arena.allocate(capacityBytes, 4096);
        this.threads = new Thread[queues];
        this.stop = new boolean[queues];
    }

    @Override
    public long features() {
        return features;
    }

    @Override
    public long protocolFeatures() {
        return ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.CONFIG);
    }

    @Override
    public int maxQueues() {
        return queues;
    }

    @Override
    public byte[] config() {
        return config.encode();
    }

    @Override
    public synchronized void startQueue(int index, QueueContext queue) {
        stop[index] = false;
        DeviceQueue q = queue.queue();
        Thread t = Thread.ofPlatform().daemon().name("ram-blk-" + index).unstarted(() -> {
            while (!stopped(index)) {
                DescriptorChain c = q.pop();
                if (c == null) {
                    q.flushUsed();
                    LockSupport.parkNanos(20_000);
                    continue;
                }
                q.pushUsed(c.head(), serve(c));
            }
            q.flushUsed();
        });
        threads[index] = t;
        t.start();
    }

    /** Whether any queue is being served (a back-end that lost its front-end stops them all). */
    synchronized boolean serving() {
        for (Thread t : threads) {
            if (t != null) {
                return true;
            }
        }
        return false;
    }

    private synchronized boolean stopped(int index) {
        return stop[index];
    }

    @Override
    public void stopQueue(int index) {
        Thread t;
        synchronized (this) {
            stop[index] = true;
            t = threads[index];
            threads[index] = null;
        }
        if (t != null) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void reset() {
        for (int i = 0; i < queues; i++) {
            stopQueue(i);
        }
    }

    /** Serves one request; returns the bytes written into its writable part. */
    private long serve(DescriptorChain c) {
        int elements = c.count();
        mostElements.accumulateAndGet(elements, Math::max);
        for (int i = 0; i < elements; i++) {
            longestElement.accumulateAndGet((int) c.length(i), Math::max);
        }
        MemorySegment header = Arena.ofAuto().allocate(BlkLayout.HEADER_BYTES + BlkLayout.SEGMENT_BYTES);
        long got = c.gather(0, header, 0, header.byteSize());
        long writable = c.writableBytes();
        if (got < BlkLayout.HEADER_BYTES || writable < 1) {
            return 0;
        }
        int type = header.get(LE_INT, BlkLayout.HEADER_TYPE);
        long offset = header.get(LE_LONG, BlkLayout.HEADER_SECTOR) * BlkLayout.SECTOR;
        long dataIn = writable - 1;
        long dataOut = c.readableBytes() - BlkLayout.HEADER_BYTES;
        int status = BlkLayout.S_OK;
        switch (type) {
            case BlkLayout.T_IN -> {
                if (offset < 0 || offset + dataIn > disk.byteSize()) {
                    status = BlkLayout.S_IOERR;
                } else {
                    c.scatter(0, disk, offset, dataIn);
                }
            }
            case BlkLayout.T_OUT -> {
                if ((features & bit(BlkLayout.F_RO)) != 0) {
                    status = BlkLayout.S_IOERR;
                } else if (offset < 0 || offset + dataOut > disk.byteSize()) {
                    status = BlkLayout.S_IOERR;
                } else {
                    c.gather(BlkLayout.HEADER_BYTES, disk, offset, dataOut);
                }
                dataIn = 0;
            }
            case BlkLayout.T_FLUSH -> dataIn = 0;
            case BlkLayout.T_GET_ID -> {
                byte[] id = new byte[BlkLayout.ID_BYTES];
                byte[] text = ID.getBytes(StandardCharsets.US_ASCII);
                System.arraycopy(text, 0, id, 0, text.length);
                dataIn = Math.min(dataIn, BlkLayout.ID_BYTES);
                c.scatter(0, MemorySegment.ofArray(id), 0, dataIn);
            }
            case BlkLayout.T_DISCARD, BlkLayout.T_WRITE_ZEROES -> {
                long sector = header.get(LE_LONG, BlkLayout.HEADER_BYTES + BlkLayout.SEGMENT_SECTOR);
                long sectors = Integer.toUnsignedLong(header.get(LE_INT, BlkLayout.HEADER_BYTES + BlkLayout.SEGMENT_NUM_SECTORS));
                if (got < BlkLayout.HEADER_BYTES + BlkLayout.SEGMENT_BYTES
                        || (sector + sectors) * BlkLayout.SECTOR > disk.byteSize()) {
                    status = BlkLayout.S_IOERR;
                } else if (type == BlkLayout.T_WRITE_ZEROES) {
                    disk.asSlice(sector * BlkLayout.SECTOR, sectors * BlkLayout.SECTOR).fill((byte) 0);
                }
                dataIn = 0;
            }
            default -> {
                status = BlkLayout.S_UNSUPP;
                dataIn = 0;
            }
        }
        int forced = forcedStatus;
        if (forced == NO_STATUS) {
            return 0;
        }
        if (forced >= 0) {
            status = forced;
        }
        c.scatter(writable - 1, MemorySegment.ofArray(new byte[] {(byte) status}), 0, 1);
        return dataIn + 1;
    }

    void close() {
        reset();
        arena.close();
    }
}
