package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.blk.BlkConfig;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.worker.OneRunner;
import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A one-queue virtio-blk lookalike with INFLIGHT_SHMFD that plays a back-end dying with requests in every state:
 * it takes the first six writes (its queue records them in the inflight area), performs four of them on the file,
 * returns the 2nd and 5th (out of order) and publishes them, pushes the 3rd and 6th used without publishing them
 * (completed, but the driver never hears of it), never touches the 1st and 4th, and then does nothing more: a dead
 * back-end. Only its first connection; the test serves the next ones with the real {@code BlkDevice} over the same
 * file, which must resubmit exactly the four not returned, each once as the driver sees it.
 */
final class DyingInflightBlkDevice implements VirtioDevice {
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final int TAKEN = 6;

    private final Path file;
    private final long sectors;
    private final OneRunner runner = new OneRunner("dying-inflight-blk", Worker::new);
    /** Set once the six are taken and left in their states: the test then ends the connection. */
    volatile boolean dead;
    /** Connections ended (device resets). */
    volatile int resets;

    DyingInflightBlkDevice(Path file, long sectors) {
        this.file = file;
        this.sectors = sectors;
    }

    /** A subset of what {@code BlkDevice} offers, so that a driver reconnecting to one negotiates the same. */
    @Override
    public long features() {
        return VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.RING_PACKED)
                | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX) | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC)
                // offered (the session then offers LOG_SHMFD, as BlkDevice's does) but never negotiated here
                | VirtioFeatures.bit(ProtocolFeatures.VHOST_F_LOG_ALL);
    }

    @Override
    public long protocolFeatures() {
        return ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.CONFIG)
                | ProtocolFeatures.bit(ProtocolFeatures.INFLIGHT_SHMFD);
    }

    @Override
    public int maxQueues() {
        return 1;
    }

    @Override
    public byte[] config() {
        return new BlkConfig(sectors, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0).encode();
    }

    @Override
    public void startQueue(int index, QueueContext queue) {
        runner.attach(queue);
    }

    @Override
    public void stopQueue(int index) {
        runner.detach(index);
    }

    @Override
    public synchronized void reset() {
        runner.close();
        resets++;
    }

    /** The queue's cause of breakage: its back-end died. */
    private static final class Died extends RingViolationException {
        private static final long serialVersionUID = 1L;

        Died() {
            super("queue", 0, "the back-end died with used entries pushed and not published");
        }
    }

    private final class Worker implements QueueWorker {
        private QueueContext queue;
        private final int[] heads = new int[TAKEN];
        private final long[] written = new long[TAKEN];
        private int taken;

        @Override
        public void onAttach(QueueContext q) {
            queue = q;
        }

        @Override
        public void onDetach(QueueContext q) {
            queue = null;
        }

        @Override
        public int doWork() {
            QueueContext q = queue;
            if (q == null || dead) {
                return 0;
            }
            DeviceQueue dq = q.queue();
            int n = 0;
            DescriptorChain c;
            while (taken < TAKEN && (c = dq.pop()) != null) {
                n++;
                heads[taken] = c.head();
                written[taken] = c.writableBytes();
                if (taken != 0 && taken != 3) {
                    serve(c); // now: the chain is reused by the next pop
                }
                taken++;
            }
            if (taken == TAKEN) {
                dq.pushUsed(heads[4], written[4]);
                dq.pushUsed(heads[1], written[1]);
                dq.publishUsed();
                dq.pushUsed(heads[5], written[5]);
                dq.pushUsed(heads[2], written[2]);
                // and never published: a dead process publishes nothing more. Broken, as the runner breaks the queue
                // of a worker that died, so that the session's stop at the connection's end leaves them unpublished
                // too (it publishes what a live device left pushed).
                dq.fail(new Died());
                dead = true;
            }
            return n;
        }

        @Override
        public boolean prepareSleep() {
            QueueContext q = queue;
            return q == null || dead || !q.queue().enableKicksOrFindPending();
        }

        @Override
        public void onWake(int events) {
        }
    }

    /** Performs one WRITE on the file and writes its status (OK) into the buffer. */
    private void serve(DescriptorChain c) {
        MemorySegment header = MemorySegment.ofArray(new byte[BlkLayout.HEADER_BYTES]);
        c.gather(0, header, 0, BlkLayout.HEADER_BYTES);
        if (header.get(LE_INT, BlkLayout.HEADER_TYPE) != BlkLayout.T_OUT) {
            throw new IllegalStateException("the test sends writes only");
        }
        long at = header.get(LE_LONG, BlkLayout.HEADER_SECTOR) * BlkLayout.SECTOR;
        byte[] data = new byte[(int) (c.readableBytes() - BlkLayout.HEADER_BYTES)];
        c.gather(BlkLayout.HEADER_BYTES, MemorySegment.ofArray(data), 0, data.length);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(data);
            while (b.hasRemaining()) {
                ch.write(b, at + b.position());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        c.scatter(c.writableBytes() - 1, MemorySegment.ofArray(new byte[] {(byte) BlkLayout.S_OK}), 0, 1);
    }
}
