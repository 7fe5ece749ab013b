package io.virtio4j.devices.rng;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.AddressOutOfRangeException;
import io.virtio4j.core.error.RingViolationException;
import io.virtio4j.core.error.UnexpectedReadableException;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.QueueStartRefusedException;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.frontend.DriverRing;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link RngDevice} served in process to our front-end library (vhost.frontend), on a split and a packed ring: the
 * bytes the driver gets are the source's stream, in order, each buffer's used length what it offered (capped at
 * {@link RngDevice#MAX_BYTES_PER_BUFFER}, the bytes past the cap untouched); hostile buffers (a readable element, a
 * length past guest memory) break the queue with their own violation, and nothing comes back.
 */
@ExtendWith(NoFdLeaks.class)
class RngDeviceTest {
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(20); // a hang guard, not a timing assertion
    private static final long SEED = 20261201;
    private static final byte UNTOUCHED = (byte) 0xEE;

    /** The device's one queue as the back-end started it: the test reads the violation that broke it. */
    private static final class Watched implements VirtioDevice {
        final RngDevice device = new RngDevice(RngSource.seed(SEED), NotificationMode.NOTIFY);
        final AtomicReference<QueueContext> started = new AtomicReference<>();

        @Override
        public long features() {
            return device.features();
        }

        @Override
        public int maxQueues() {
            return device.maxQueues();
        }

        @Override
        public byte[] config() {
            return device.config();
        }

        @Override
        public void startQueue(int index, QueueContext queue) throws QueueStartRefusedException {
            started.set(queue);
            device.startQueue(index, queue);
        }

        @Override
        public void stopQueue(int index) {
            device.stopQueue(index);
        }

        @Override
        public void reset() {
            device.reset();
        }

        @Override
        public void retire(Runnable unmap) {
            device.retire(unmap);
        }
    }

    /** A driver of one requestq of 16 in {@code format} (EVENT_IDX, INDIRECT_DESC) over 1 MiB of guest memory, started. */
    private record Rig(Watched watched, FrontendSession session, DriverRing ring) implements AutoCloseable {
        static Rig start(RingFormat format) {
            Watched w = new Watched();
            InProcessBackend.Connected c = InProcessBackend.start(w, "rng");
            FrontendSession s = FrontendSession.over(c.frontend());
            try {
                long wanted = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
                        | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) | (format == RingFormat.PACKED ? VirtioFeatures.bit(VirtioFeatures.RING_PACKED) : 0);
                long got = s.negotiate(wanted, wanted, FrontendSession.PROTOCOL_FEATURES, 0, 1);
                assertEquals(wanted, got & ~(1L << 30), "every asked feature offered, no config, no device features");
                s.attach(GuestMemory.create("rng-test", 1 << 20));
                // chains of two or more elements go in indirect tables of up to 4
                DriverRing r = s.addRing(format, 16, 4, DriverOptions.defaults(), true);
                s.start();
                return new Rig(w, s, r);
            } catch (RuntimeException | Error e) {
                s.close();
                w.device.close();
                throw e;
            }
        }

        MemorySegment carve(long bytes) {
            MemorySegment m = session.memory().carveSegment(bytes, 64);
            m.fill(UNTOUCHED);
            return m;
        }

        long gpa(MemorySegment m) {
            return session.memory().gpa(m);
        }

        /** Adds {@code sg} as buffer {@code token} and kicks. */
        void post(ScatterGather sg, int token) {
            ring.queue().add(sg, token);
            ring.queue().kick();
        }

        /** Waits until {@code n} buffers came back; returns their used lengths by token. */
        long[] reap(int n) throws InterruptedException {
            long[] used = new long[n];
            long deadline = System.nanoTime() + WAIT_NANOS;
            DriverQueue q = ring.queue();
            for (int got = 0; got < n; ) {
                Object t = q.pollUsed();
                if (t != null) {
                    used[(Integer) t] = q.lastUsedLength();
                    got++;
                } else if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError(got + " of " + n + " buffers came back");
                } else {
                    ring.await(TimeUnit.MILLISECONDS.toNanos(100));
                }
            }
            return used;
        }

        /** Waits until the device's queue is broken; returns why. */
        RingViolationException broken() throws InterruptedException {
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (watched.started.get() == null || !watched.started.get().queue().isBroken()) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("the queue did not break");
                }
                Thread.sleep(1);
            }
            return watched.started.get().queue().violation();
        }

        @Override
        public void close() {
            try {
                session.close();
            } finally {
                watched.device.close();
            }
        }
    }

    /** The first {@code n} bytes of the stream from {@link #SEED}. */
    private static byte[] stream(long n) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Math.max(1, n));
            RngSource.seed(SEED).fill(s, n);
            return s.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void theDriverGetsTheSourceStreamInOrderWithItsLengths(RingFormat format) throws Exception {
        try (Rig rig = Rig.start(format)) {
            // one-element buffers of awkward sizes, and one of three elements (in an indirect table): the stream does not
            // follow descriptors
            int[][] shapes = {{1}, {7}, {64}, {100}, {4096}, {10, 20, 30}, {64}, {3}};
            List<MemorySegment> parts = new ArrayList<>();
            List<Integer> owner = new ArrayList<>();
            for (int b = 0; b < shapes.length; b++) {
                ScatterGather sg = new ScatterGather(shapes[b].length);
                for (int len : shapes[b]) {
                    MemorySegment m = rig.carve(len);
                    sg.writable(rig.gpa(m), len);
                    parts.add(m);
                    owner.add(b);
                }
                rig.post(sg, b);
            }
            long[] used = rig.reap(shapes.length);
            long total = 0;
            for (int b = 0; b < shapes.length; b++) {
                long offered = 0;
                for (int len : shapes[b]) {
                    offered += len;
                }
                assertEquals(offered, used[b], "buffer " + b + ": the device fills what it is offered");
                total += offered;
            }
            MemorySegment got = MemorySegment.ofArray(new byte[(int) total]);
            long at = 0;
            for (MemorySegment m : parts) {
                MemorySegment.copy(m, 0, got, at, m.byteSize());
                at += m.byteSize();
            }
            byte[] want = stream(total);
            assertEquals(crc(want), crc(got), "the buffers hold the stream, in the order they were offered");
            // counted before the pass publishes them (its notification decision is counted after: not waited for here)
            io.virtio4j.devices.worker.ChainWorker.Stats stats = rig.watched.device.stats();
            assertEquals(shapes.length, stats.buffers(), stats.toString());
            assertEquals(total, stats.bytes(), stats.toString());
        }
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aBufferLargerThanTheCapGetsTheCapAndTheRestIsUntouched(RingFormat format) throws Exception {
        try (Rig rig = Rig.start(format)) {
            int cap = RngDevice.MAX_BYTES_PER_BUFFER;
            MemorySegment big = rig.carve(3L * cap);
            rig.post(new ScatterGather(1).writable(rig.gpa(big), 3 * cap), 0);
            MemorySegment next = rig.carve(16);
            rig.post(new ScatterGather(1).writable(rig.gpa(next), 16), 1);
            long[] used = rig.reap(2);
            assertEquals(cap, used[0]);
            assertEquals(16, used[1]);
            byte[] want = stream(cap + 16L);
            assertEquals(crc(MemorySegment.ofArray(want).asSlice(0, cap)), crc(big, 0, cap));
            for (long i = cap; i < big.byteSize(); i++) {
                assertEquals(UNTOUCHED, big.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " past the cap");
            }
            assertEquals(crc(MemorySegment.ofArray(want).asSlice(cap, 16)), crc(next), "the next buffer goes on from the cap");
        }
    }

    /**
     * The queue thread allocates nothing per buffer once compiled (kick, pass, source, copy, publication, sleep): rounds
     * of buffers repeat until one round leaves the thread's allocated-bytes counter where it was, so a slow JIT only
     * makes the test longer; a path that allocates on every buffer never gets there.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void servingBuffersAllocatesNothing(RingFormat format) throws Exception {
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        try (Rig rig = Rig.start(format)) {
            MemorySegment[] buffers = new MemorySegment[8];
            for (int b = 0; b < buffers.length; b++) {
                buffers[b] = rig.carve(64 + 37L * b);
            }
            long worker = -1;
            long last = -1;
            int round = 0;
            for (; round < 3_000; round++) {
                for (int b = 0; b < buffers.length; b++) {
                    rig.post(new ScatterGather(1).writable(rig.gpa(buffers[b]), (int) buffers[b].byteSize()), b);
                }
                rig.reap(buffers.length);
                worker = rig.watched.device.workerThreadId();
                assertTrue(worker > 0, "a queue thread serves the buffers");
                long now = threads.getThreadAllocatedBytes(worker);
                if (now == last) {
                    break;
                }
                last = now;
            }
            assertTrue(round < 3_000, "the queue thread " + worker + " allocated in each of " + round + " rounds");
        }
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aReadableElementBreaksTheQueue(RingFormat format) throws Exception {
        try (Rig rig = Rig.start(format)) {
            MemorySegment in = rig.carve(16);
            MemorySegment out = rig.carve(64);
            rig.post(new ScatterGather(2).readable(rig.gpa(in), 16).writable(rig.gpa(out), 64), 0);
            UnexpectedReadableException e = assertInstanceOf(UnexpectedReadableException.class, rig.broken());
            assertTrue(e.field().startsWith("requestq buffer "), e.field());
            assertEquals(16, e.value(), "the readable bytes");
            assertNull(rig.ring.queue().pollUsed(), "nothing comes back on a broken queue");
            for (long i = 0; i < 64; i++) {
                assertEquals(UNTOUCHED, out.get(ValueLayout.JAVA_BYTE, i), "nothing written");
            }
            assertEquals(0, rig.watched.device.stats().bytes());
        }
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aLengthPastGuestMemoryBreaksTheQueue(RingFormat format) throws Exception {
        try (Rig rig = Rig.start(format)) {
            MemorySegment out = rig.carve(64);
            rig.post(new ScatterGather(1).writable(rig.gpa(out), -1), 0); // 0xFFFFFFFF bytes: past the 1 MiB
            assertInstanceOf(AddressOutOfRangeException.class, rig.broken());
            assertFalse(rig.ring.queue().hasUsed(), "nothing comes back on a broken queue");
            assertEquals(0, rig.watched.device.stats().bytes());
        }
    }
}
