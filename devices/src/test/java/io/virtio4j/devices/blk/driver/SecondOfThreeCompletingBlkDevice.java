package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.blk.BlkConfig;
import io.virtio4j.devices.blk.BlkLayout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A one-queue virtio-blk lookalike over a 1 MiB RAM disk that, on its first connection, plays a back-end dying
 * mid-way with completions out of order: it takes the first three requests, completes only the second, and never
 * touches the other two again (not even when its queue is stopped: a dead back-end returns nothing). From its next
 * connection on it serves READ and WRITE as they come. Only for tests of what a driver offers again after such a
 * death; {@link #disk} shows what was written.
 */
final class SecondOfThreeCompletingBlkDevice extends OneQueueBlkLookalike {
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final long SECTORS = 2048;

    /** The RAM disk. */
    final MemorySegment disk = MemorySegment.ofArray(new byte[(int) (SECTORS * BlkLayout.SECTOR)]);
    /** Connections ended (device resets): the test waits for the first before it reconnects. */
    volatile int resets;

    SecondOfThreeCompletingBlkDevice() {
        super("second-of-three-blk");
    }

    @Override
    public long features() {
        return VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC);
    }

    @Override
    public byte[] config() {
        return new BlkConfig(SECTORS, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0).encode();
    }

    @Override
    public synchronized void reset() {
        super.reset();
        resets++;
    }

    /**
     * First connection: take three, complete the second, then nothing (a dead back-end returns nothing, not even
     * when its queue is stopped: the two it holds stay unreturned). Later ones: serve every request.
     */
    @Override
    Answering newWorker() {
        boolean dying = resets == 0;
        return new Answering() {
            /** Requests taken on the first connection. */
            private int taken;

            @Override
            boolean more() {
                return !dying || taken < 3;
            }

            @Override
            void answer(DeviceQueue dq, DescriptorChain c) {
                // the chain is reused by the next pop: the second is served as it is taken, the others never
                if (!dying || ++taken == 2) {
                    serve(dq, c);
                }
            }
        };
    }

    /** Serves one READ or WRITE on the RAM disk: status written, used length the writable bytes. */
    private void serve(DeviceQueue dq, DescriptorChain c) {
        MemorySegment header = MemorySegment.ofArray(new byte[BlkLayout.HEADER_BYTES]);
        c.gather(0, header, 0, BlkLayout.HEADER_BYTES);
        int type = header.get(LE_INT, BlkLayout.HEADER_TYPE);
        long at = header.get(LE_LONG, BlkLayout.HEADER_SECTOR) * BlkLayout.SECTOR;
        long status = c.writableBytes() - 1;
        long data = type == BlkLayout.T_OUT ? c.readableBytes() - BlkLayout.HEADER_BYTES : status;
        int s = BlkLayout.S_OK;
        if ((type != BlkLayout.T_IN && type != BlkLayout.T_OUT) || at < 0 || data < 0 || at > disk.byteSize() - data) {
            s = BlkLayout.S_IOERR;
        } else if (type == BlkLayout.T_OUT) {
            c.gather(BlkLayout.HEADER_BYTES, disk, at, data);
        } else {
            c.scatter(0, disk, at, data);
        }
        c.scatter(status, MemorySegment.ofArray(new byte[] {(byte) s}), 0, 1);
        dq.pushUsed(c.head(), c.writableBytes());
    }
}
