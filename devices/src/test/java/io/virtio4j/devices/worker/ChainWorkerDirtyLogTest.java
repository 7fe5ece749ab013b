package io.virtio4j.devices.worker;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.frontend.DirtyLogging;
import io.virtio4j.vhost.frontend.DriverRing;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.BitSet;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.devices.DirtyPages.pages;
import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A {@link ChainWorker} device served while the front-end logs (SET_LOG_BASE, LOG_ALL): the log holds the pages of
 * the bytes the handler wrote, in every element they reach, and not the pages of the part of a buffer it left alone;
 * the bytes themselves arrive intact (checksum). Split and packed.
 */
@ExtendWith(NoFdLeaks.class)
class ChainWorkerDirtyLogTest {
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(20); // a hang guard, not a timing assertion
    private static final long PAGE = 4096;
    /** What the handler writes into every buffer at most: past the first element, into the second's first page. */
    private static final int WRITES = 3000;

    private static byte pattern(long i) {
        return (byte) (i * 31 + 7);
    }

    /** A device of one queue whose handler writes {@link #WRITES} bytes of {@link #pattern}; it offers LOG_ALL. */
    private static final class PatternDevice implements VirtioDevice {
        final DeviceRunners<ChainWorker, ChainWorker.Stats> runners = new DeviceRunners<>("chain-log-", 1, new int[0], 0,
                slot -> new ChainWorker("chain-log", 64, new ChainWorker.Handler() {
                    private MemorySegment staging;

                    @Override
                    public void onStart(Arena arena) {
                        staging = arena.allocate(WRITES);
                        for (int i = 0; i < WRITES; i++) {
                            staging.set(ValueLayout.JAVA_BYTE, i, pattern(i));
                        }
                    }

                    @Override
                    public long serve(DescriptorChain chain) {
                        return chain.scatter(0, staging, 0, Math.min(WRITES, chain.writableBytes()));
                    }
                }), ChainWorker::stats, ChainWorker.Stats::zero, ChainWorker.Stats::plus);

        @Override
        public long features() {
            return VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
                    | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) | VirtioFeatures.bit(VirtioFeatures.RING_PACKED)
                    | VirtioFeatures.bit(ProtocolFeatures.VHOST_F_LOG_ALL);
        }

        @Override
        public int maxQueues() {
            return 1;
        }

        @Override
        public byte[] config() {
            return new byte[0];
        }

        @Override
        public void startQueue(int index, QueueContext queue) {
            runners.attach(0, queue, NotificationMode.NOTIFY);
        }

        @Override
        public void stopQueue(int index) {
            runners.detach(0, index);
        }

        @Override
        public void reset() {
            runners.reset();
        }

        @Override
        public void retire(Runnable unmap) {
            runners.retire(unmap);
        }
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void theLogHoldsThePagesTheHandlerWroteAndNotTheRestOfTheBuffer(RingFormat format) throws Exception {
        PatternDevice device = new PatternDevice();
        InProcessBackend.Connected c = InProcessBackend.start(device, "chain-log");
        try (FrontendSession s = FrontendSession.over(c.frontend())) {
            long wanted = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
                    | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC)
                    | (format == RingFormat.PACKED ? VirtioFeatures.bit(VirtioFeatures.RING_PACKED) : 0);
            s.negotiate(wanted, wanted, FrontendSession.PROTOCOL_FEATURES, 0, 1);
            s.attach(GuestMemory.create("chain-log", 1 << 20));
            DriverRing ring = s.addRing(format, 16, 4, DriverOptions.defaults(), true);
            s.start();
            try (DirtyLogging logging = DirtyLogging.start(s)) {
                GuestMemory m = s.memory();
                // What the queue itself writes (its used entries, maybe its event area): its pages may be marked.
                BitSet ringPages = new BitSet();
                switch (s.ring(0).areas()) {
                    case SplitRingAreas a -> pages(ringPages, m.gpa(a.usedRing()), SplitLayout.usedRingBytes(16));
                    case PackedRingAreas a -> {
                        pages(ringPages, m.gpa(a.descRing()), PackedLayout.descRingBytes(16));
                        pages(ringPages, m.gpa(a.deviceEvent()), PackedLayout.EVENT_SIZE);
                    }
                }
                logging.takeDirtyPages(); // the restart under the log wrote only ring pages, if anything
                // Three pages of the guest's: a 100-byte element ending where the second page starts, and an
                // 8 KiB element over the second and third. 3000 bytes written: 100 in the first, 2900 in the second.
                MemorySegment area = m.carveSegment(3 * PAGE, PAGE);
                area.fill((byte) 0);
                long base = m.gpa(area);
                ring.queue().add(new ScatterGather(2).writable(base + PAGE - 100, 100).writable(base + PAGE, (int) (2 * PAGE)), 1);
                ring.queue().kick();
                DriverQueue q = ring.queue();
                long deadline = System.nanoTime() + WAIT_NANOS;
                Object token;
                while ((token = q.pollUsed()) == null) {
                    assertTrue(System.nanoTime() - deadline < 0, "the buffer did not come back");
                    ring.await(TimeUnit.MILLISECONDS.toNanos(100));
                }
                assertEquals(1, token);
                assertEquals(WRITES, q.lastUsedLength());
                MemorySegment want = MemorySegment.ofArray(new byte[WRITES]);
                for (int i = 0; i < WRITES; i++) {
                    want.set(ValueLayout.JAVA_BYTE, i, pattern(i));
                }
                assertEquals(crc(want), crc(area.asSlice(PAGE - 100, WRITES)), "the handler's bytes, intact");

                BitSet dirty = logging.takeDirtyPages();
                dirty.andNot(ringPages);
                BitSet expected = new BitSet();
                pages(expected, base + PAGE - 100, WRITES); // the first two pages of the area, not the third
                assertEquals(2, expected.cardinality());
                assertEquals(expected, dirty, "pages marked beyond the ring's");
                ChainWorker.Stats totals = device.runners.totals();
                assertEquals(1, totals.buffers(), totals.toString());
                assertEquals(WRITES, totals.bytes(), totals.toString());
            }
        } finally {
            c.backend().awaitEnd();
            device.reset();
        }
    }
}
