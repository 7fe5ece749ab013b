package io.virtio4j.devices.net.driver;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.NetDevice;
import io.virtio4j.devices.net.NetMode;
import io.virtio4j.vhost.backend.InProcessBackend;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The driver's hot paths (post, send, kick, receive, reap, and the waits between them) allocate nothing once
 * compiled: rounds of echoes through a loopback device served in process are measured with this thread's
 * allocated bytes until one round allocates none. Rounds repeat until the compiled code is in place, so a slow JIT
 * on a busy machine only makes the test longer.
 */
class NetDriverAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int FRAMES = 32;
    private static final int ECHOES_PER_ROUND = 200;
    private static final int MAX_ROUNDS = 2_000;
    private static final long WAIT_NANOS = 10_000_000_000L;

    /** Counts frames: one handler object for every call. */
    private static final class Counter implements NetDriver.FrameHandler {
        long frames;

        @Override
        public void frame(MemorySegment frame, long length, int numBuffers) {
            frames++;
        }
    }

    /** {@link #FRAMES} frames out and back, every transmit buffer reclaimed. */
    private static void echo(NetDriver d, MemorySegment frame, Counter counter) throws InterruptedException {
        d.postRx(0);
        for (int i = 0; i < FRAMES; i++) {
            if (!d.send(0, frame, 0, (int) frame.byteSize())) {
                throw new AssertionError("no free transmit slot");
            }
        }
        d.kickTx(0);
        long want = counter.frames + FRAMES;
        while (counter.frames < want) {
            if (d.receive(0, counter) == 0 && !d.awaitRx(0, WAIT_NANOS)) {
                throw new AssertionError("no frame back within " + WAIT_NANOS / 1_000_000 + " ms");
            }
        }
        while (d.txInFlight(0) > 0) {
            if (d.reapTx(0) == 0 && !d.awaitTx(0, WAIT_NANOS)) {
                throw new AssertionError("transmit buffers not returned within " + WAIT_NANOS / 1_000_000 + " ms");
            }
        }
    }

    @Test
    void echoingAllocatesNothing() throws Exception {
        NetDevice device = new NetDevice(new NetDevice.Options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY, 20_000, 64,
                new int[0], new byte[] {0x52, 0x54, 0x00, 0x12, 0x34, 0x56}, 1500));
        InProcessBackend.Connected c = InProcessBackend.start(device, "driver-alloc");
        try (device; Arena arena = Arena.ofConfined();
             NetDriver d = NetDriver.start(c.frontend(), NetDriver.Config.defaults())) {
            MemorySegment frame = arena.allocate(60);
            Counter counter = new Counter();
            long least = Long.MAX_VALUE;
            for (int round = 0; round < MAX_ROUNDS && least > 0; round++) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < ECHOES_PER_ROUND; i++) {
                    echo(d, frame, counter);
                }
                least = Math.min(least, THREADS.getCurrentThreadAllocatedBytes() - before);
            }
            assertEquals(0, least, "bytes allocated by the least allocating round of " + ECHOES_PER_ROUND + " echoes");
        } finally {
            c.backend().awaitEnd();
        }
    }
}
