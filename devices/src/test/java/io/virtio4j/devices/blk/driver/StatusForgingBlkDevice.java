package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.blk.BlkConfig;
import io.virtio4j.devices.blk.BlkLayout;

import java.lang.foreign.MemorySegment;

/**
 * A one-queue virtio-blk lookalike that does what the real {@code BlkDevice} never does: it performs no I/O and
 * answers every request with the status byte the test sets in {@link #status}, a value outside the spec (7)
 * included, or, with {@link #NO_STATUS}, writes no status at all and reports 0 bytes written. Only for tests of
 * how a driver takes a device's bad answers; set back to OK it lets the test show the queue goes on.
 */
final class StatusForgingBlkDevice extends OneQueueBlkLookalike {
    /** {@link #status} value: write no status byte, used length 0. */
    static final int NO_STATUS = 256;

    volatile int status = BlkLayout.S_OK;

    StatusForgingBlkDevice() {
        super("status-forging-blk");
    }

    @Override
    public long features() {
        return VirtioFeatures.bit(VirtioFeatures.VERSION_1) | BlkLayout.bit(BlkLayout.F_FLUSH);
    }

    /** 1 MiB; every field the driver checks is valid (only the answers are wrong). */
    @Override
    public byte[] config() {
        return new BlkConfig(2048, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0).encode();
    }

    /** Answers whatever is on the queue, on the runner's thread. */
    @Override
    Answering newWorker() {
        return new Answering() {
            @Override
            void answer(DeviceQueue dq, DescriptorChain c) {
                int s = status;
                if (s == NO_STATUS) {
                    dq.pushUsed(c.head(), 0);
                } else {
                    c.scatter(c.writableBytes() - 1, MemorySegment.ofArray(new byte[] {(byte) s}), 0, 1);
                    dq.pushUsed(c.head(), 1);
                }
            }
        };
    }
}
