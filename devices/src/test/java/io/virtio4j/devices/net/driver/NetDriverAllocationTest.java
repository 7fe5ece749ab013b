package io.virtio4j.devices.net.driver;

import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.NetDevice;
import io.virtio4j.devices.net.NetMode;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * The hot paths allocate nothing once compiled, on both sides of the rings: the driver's (post, send, kick,
 * receive, reap, and the waits between them) and the device worker's (kicks read, frames popped, copied and
 * delivered, used buffers pushed, the driver notified, the sleeps between). Rounds of echoes through a loopback
 * device served in process are measured with the allocated bytes of this thread and of the pair's worker thread
 * until one round allocates none on either. Rounds repeat until the compiled code is in place, so a slow JIT on a
 * busy machine only makes the test longer.
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

    /** Split, and packed with IN_ORDER (the other ring paths: flags, event suppression, batched used descriptors). */
    @ParameterizedTest
    @CsvSource({"SPLIT, false", "PACKED, true"})
    void echoingAllocatesNothing(RingFormat format, boolean inOrder) throws Exception {
        NetDevice device = new NetDevice(new NetDevice.Options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY, 20_000, 64,
                new int[0], new byte[] {0x52, 0x54, 0x00, 0x12, 0x34, 0x56}, 1500));
        InProcessBackend.Connected c = InProcessBackend.start(device, "driver-alloc");
        try (device; Arena arena = Arena.ofConfined();
             NetDriver d = NetDriver.start(c.frontend(),
                     NetDriver.Config.defaults().withFormat(format).withInOrder(inOrder))) {
            MemorySegment frame = arena.allocate(60);
            Counter counter = new Counter();
            long worker = device.workerThreadId(0);
            assertNotEquals(-1, worker, "the pair's worker runs once the rings started");
            long leastDriver = Long.MAX_VALUE;
            long leastWorker = Long.MAX_VALUE;
            for (int round = 0; round < MAX_ROUNDS && (leastDriver > 0 || leastWorker > 0); round++) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                long workerBefore = THREADS.getThreadAllocatedBytes(worker);
                for (int i = 0; i < ECHOES_PER_ROUND; i++) {
                    echo(d, frame, counter);
                }
                // The worker's figure is read after every buffer of the round came back: what it allocated for
                // them is counted (it may be counting the start of its next sleep too, which must not allocate
                // either).
                long workerBytes = THREADS.getThreadAllocatedBytes(worker) - workerBefore;
                long driverBytes = THREADS.getCurrentThreadAllocatedBytes() - before;
                leastDriver = Math.min(leastDriver, driverBytes);
                leastWorker = Math.min(leastWorker, workerBytes);
            }
            assertEquals(0, leastDriver, "bytes allocated by the driver in its least allocating round of "
                    + ECHOES_PER_ROUND + " echoes");
            assertEquals(0, leastWorker, "bytes allocated by the device's worker in its least allocating round of "
                    + ECHOES_PER_ROUND + " echoes");
        } finally {
            c.backend().awaitEnd();
        }
    }

    /**
     * The sending loop of {@code drive net --mode txonly} and of the experiments' vhost-user rows ({@link TxStream}
     * rounds: reclaim, add up to a batch, publish as the policy says, kick) into an rxonly back-end, polling or sleeping
     * on kicks, under each publication policy: once compiled, neither the sending thread nor the back-end's worker
     * allocates. (The experiments log both per run; their short CI runs can end before the JIT is done, so the
     * figure is asserted here, where rounds repeat until the compiled code is in place.)
     */
    @ParameterizedTest
    @CsvSource({"POLL, EAGER", "POLL, LAZY", "NOTIFY, ADAPTIVE"})
    void txStreamRoundsIntoAnRxonlyBackEndAllocateNothing(NotificationMode mode, AvailPublication publication)
            throws Exception {
        NetDevice device = new NetDevice(new NetDevice.Options(1, NetMode.RXONLY, mode, 20_000, 64, new int[0],
                new byte[] {0x52, 0x54, 0x00, 0x12, 0x34, 0x56}, 1500));
        InProcessBackend.Connected c = InProcessBackend.start(device, "tx-stream-alloc");
        try (device; Arena arena = Arena.ofConfined();
             NetDriver d = NetDriver.start(c.frontend(), NetDriver.Config.defaults().withPublication(publication))) {
            TxStream s = new TxStream(d, 0, arena.allocate(64, 8), 64, false);
            long worker = device.workerThreadId(0);
            assertNotEquals(-1, worker, "the pair's worker runs once the rings started");
            long leastDriver = Long.MAX_VALUE;
            long leastWorker = Long.MAX_VALUE;
            for (int round = 0; round < MAX_ROUNDS && (leastDriver > 0 || leastWorker > 0); round++) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                long workerBefore = THREADS.getThreadAllocatedBytes(worker);
                for (int i = 0; i < ECHOES_PER_ROUND; i++) {
                    s.round(Long.MAX_VALUE);
                }
                if (!s.drain(WAIT_NANOS)) {
                    throw new AssertionError("frames still in flight after " + WAIT_NANOS / 1_000_000 + " ms");
                }
                // after the drain: every frame of the round was used, so what the worker allocated for it is counted
                long workerBytes = THREADS.getThreadAllocatedBytes(worker) - workerBefore;
                long driverBytes = THREADS.getCurrentThreadAllocatedBytes() - before;
                leastDriver = Math.min(leastDriver, driverBytes);
                leastWorker = Math.min(leastWorker, workerBytes);
            }
            assertEquals(0, leastDriver, "bytes allocated by the sender in its least allocating round of "
                    + ECHOES_PER_ROUND + " rounds");
            assertEquals(0, leastWorker, "bytes allocated by the rxonly worker in its least allocating round of "
                    + ECHOES_PER_ROUND + " rounds");
            // The worker stores its counters once per pass, after the pass's used entries were published: the drain
            // above can see the last frames used before the pass that took them has counted them.
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (device.stats(0).fromGuestPackets() != s.sent() && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(s.sent(), device.stats(0).fromGuestPackets(), "every frame sent was received");
        } finally {
            c.backend().awaitEnd();
        }
    }
}
