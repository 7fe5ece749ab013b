package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Mmap;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The front-end session's side of INFLIGHT_SHMFD against this back-end, in process: it asks for the feature when
 * offered (unless told not to), gets an area at the first start (one for rings of different sizes) and keeps it over
 * stops and starts, drops it on a reset (a fresh one at the next start) and closes its fd with the session.
 */
@ExtendWith(NoFdLeaks.class)
class FrontendInflightTest {
    private static final long FEATURES = VirtioFeatures.bit(VirtioFeatures.VERSION_1);

    /**
     * Two queues, MQ, RESET_DEVICE (the session's) and, if {@code inflight}, INFLIGHT_SHMFD; records starts and the queues started. The first
     * {@code noArea} GET_INFLIGHT_FDs find no area to give: the device's queue size is then 32 for them (what the
     * back-end checks the question against), smaller than the rings', as if it could not make one then.
     */
    private static final class Device extends RecordingDevice {
        private final boolean inflight;
        private final AtomicInteger noArea;
        private final long features;
        /** The queue each ring last started with, by ring index. */
        final Map<Integer, QueueContext> startedByRing = new ConcurrentHashMap<>();

        Device(boolean inflight) {
            this(inflight, 0);
        }

        Device(boolean inflight, int noArea) {
            this(inflight, noArea, FEATURES);
        }

        Device(boolean inflight, int noArea, long features) {
            this.inflight = inflight;
            this.noArea = new AtomicInteger(noArea);
            this.features = features;
        }

        /** Asked at each GET_INFLIGHT_FD, SET_INFLIGHT_FD and SET_VRING_NUM; FrontendSession sends GET first. */
        @Override
        public int maxQueueSize() {
            return noArea.getAndUpdate(n -> Math.max(0, n - 1)) > 0 ? 32 : 1024;
        }

        @Override
        public long features() {
            return features;
        }

        @Override
        public long protocolFeatures() {
            return bit(ProtocolFeatures.MQ) | (inflight ? bit(ProtocolFeatures.INFLIGHT_SHMFD) : 0);
        }

        @Override
        public int maxQueues() {
            return 2;
        }

        @Override
        public void startQueue(int index, QueueContext queue) {
            super.startQueue(index, queue);
            startedByRing.put(index, queue);
        }
    }

    /** A session on {@code device} with two split rings of 64, negotiated, not started. */
    private static FrontendSession session(Device device, boolean useInflight) {
        InProcessBackend.Connected c = InProcessBackend.start(device, "inflight-frontend");
        FrontendSession s = FrontendSession.over(c.frontend());
        try {
            s.useInflight(useInflight);
            s.negotiate(FEATURES, FEATURES, FrontendSession.PROTOCOL_FEATURES, 0, 2);
            s.attach(GuestMemory.create("inflight-frontend", 2 * FrontendSession.ringBytes(RingFormat.SPLIT, 64)));
            s.addRing(RingFormat.SPLIT, 64, 0, DriverOptions.defaults(), true);
            s.addRing(RingFormat.SPLIT, 64, 0, DriverOptions.defaults(), true);
            return s;
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
    }

    @Test
    void theFirstStartGetsAnAreaForEveryRingAndLaterStartsHandTheSameBack() {
        Device device = new Device(true);
        FileDescriptor fd;
        try (FrontendSession s = session(device, true)) {
            assertTrue(s.hasProtocol(ProtocolFeatures.INFLIGHT_SHMFD), "asked for by default when offered");
            assertNull(s.inflightArea(), "none before the first start");
            s.start();
            VhostUserFrontend.InflightArea area = s.inflightArea();
            assertEquals(new InflightDescription(2 * InflightLayout.queueRegionBytes(RingFormat.SPLIT, 64), 0, 2, 64),
                    area.description());
            fd = area.fd();
            assertTrue(fd.isOpen());
            assertEquals(area.description().mmapSize(), fd.size());
            s.stop();
            s.start(s.initialBases());
            assertSame(area, s.inflightArea(), "kept across stops and starts");
            assertEquals(List.of("start 0", "start 1", "stop 0", "stop 1", "start 0", "start 1"), device.calls);
        }
        assertFalse(fd.isOpen(), "closed with the session");
    }

    /** A reset drops the area, as QEMU does on a VM reset: nothing before it is in flight any more. */
    @Test
    void aResetDropsTheAreaAndTheNextStartGetsAFreshOne() {
        try (FrontendSession s = session(new Device(true), true)) {
            s.start();
            VhostUserFrontend.InflightArea before = s.inflightArea();
            s.reset();
            assertNull(s.inflightArea());
            assertFalse(before.fd().isOpen(), "closed at the reset");
            s.start();
            assertNotSame(before, s.inflightArea());
            assertTrue(s.inflightArea().fd().isOpen());
        }
    }

    @Test
    void noAreaWhenTheBackendDoesNotOfferOneOrTheSessionIsToldNotTo() {
        try (FrontendSession s = session(new Device(false), true)) {
            s.start();
            assertFalse(s.hasProtocol(ProtocolFeatures.INFLIGHT_SHMFD));
            assertNull(s.inflightArea());
        }
        try (FrontendSession s = session(new Device(true), false)) {
            s.start();
            assertFalse(s.hasProtocol(ProtocolFeatures.INFLIGHT_SHMFD));
            assertNull(s.inflightArea());
        }
    }

    /**
     * A GET_INFLIGHT_FD the back-end refuses is answered in its own format, {@code mmap_size} 0 and no descriptor
     * (QEMU's "no area"), not by a closed connection; the raw front-end reads that as no area and the connection
     * serves on.
     */
    @Test
    void aRefusedGetInflightFdIsAnsweredNoAreaAndTheConnectionGoesOn() {
        InProcessBackend.Connected c = InProcessBackend.start(new Device(true), "inflight-refused");
        try (VhostUserFrontend fe = c.frontend()) {
            fe.setFeatures(FEATURES);
            fe.setProtocolFeatures(bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.INFLIGHT_SHMFD));
            assertNull(fe.getInflightFd(2, 100), "100 is not a split queue size: no area");
            assertNull(fe.getInflightFd(3, 64), "the device has two queues: no area");
            assertEquals(FEATURES, fe.getFeatures() & FEATURES, "the connection goes on");
            try (VhostUserFrontend.InflightArea area = fe.getInflightFd(2, 64)) {
                assertNotNull(area);
                assertEquals(2, area.description().numQueues());
            }
        }
    }

    /**
     * A back-end with no area to give (GET_INFLIGHT_FD answered mmap_size 0): the session starts the rings untracked,
     * as QEMU does, and asks again at the next start.
     */
    @Test
    void withNoAreaToGiveTheRingsStartUntrackedAndTheNextStartAsksAgain() {
        Device device = new Device(true, 1);
        try (FrontendSession s = session(device, true)) {
            s.start();
            assertTrue(s.hasProtocol(ProtocolFeatures.INFLIGHT_SHMFD));
            assertNull(s.inflightArea(), "no area: the rings run untracked");
            assertEquals(List.of("start 0", "start 1"), device.calls, "the start went on");
            s.stop();
            s.start(s.initialBases());
            assertNotNull(s.inflightArea(), "the next start asked again and got one");
            assertEquals(List.of("start 0", "start 1", "stop 0", "stop 1", "start 0", "start 1"), device.calls);
        }
    }

    /**
     * Without an area (the back-end offers none) a packed ring still cannot be resumed after its back-end went
     * away: refused before anything changes, the session still connected.
     */
    @Test
    void withoutAnAreaAPackedRingIsNotResumed() throws Exception {
        long packed = FEATURES | VirtioFeatures.bit(VirtioFeatures.RING_PACKED);
        try (TestServer server = new TestServer(2);
             FrontendSession s = FrontendSession.connect(server.path(), Duration.ofSeconds(20))) {
            s.negotiate(packed, packed, FrontendSession.PROTOCOL_FEATURES, 0, 1);
            assertFalse(s.hasProtocol(ProtocolFeatures.INFLIGHT_SHMFD));
            s.attach(GuestMemory.create("no-area-packed", FrontendSession.ringBytes(RingFormat.PACKED, 64)));
            s.addRing(RingFormat.PACKED, 64, 0, DriverOptions.defaults(), true);
            s.start();
            assertThrows(UnsupportedOperationException.class, () -> s.reconnect(Duration.ofSeconds(20)));
            assertTrue(s.connected(), "nothing changed");
        }
    }

    /**
     * Rings of two sizes share one area: the session asks for it with the largest ring's size (QEMU asks with its
     * queue-size property), and each ring, the smaller one too, records in its own region at that size's stride.
     * Each ring's back-end queue takes three writable buffers (the region marks each in flight, by its id, and no
     * other), writes a value into each and returns them (the region clears them), and the driver gets every buffer
     * back once with its value. Packed with a smaller size that is no power of two.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void ringsOfDifferentSizesShareOneAreaEachRecordingInItsRegion(RingFormat format) {
        long features = format == RingFormat.PACKED ? FEATURES | VirtioFeatures.bit(VirtioFeatures.RING_PACKED) : FEATURES;
        int[] sizes = {64, format == RingFormat.PACKED ? 48 : 32};
        int buffers = 3;
        Device device = new Device(true, 0, features);
        InProcessBackend.Connected c = InProcessBackend.start(device, "inflight-sizes");
        try (FrontendSession s = FrontendSession.over(c.frontend()); Arena arena = Arena.ofConfined()) {
            s.negotiate(features, features, FrontendSession.PROTOCOL_FEATURES, 0, 2);
            GuestMemory memory = GuestMemory.create("inflight-sizes", FrontendSession.ringBytes(format, sizes[0])
                    + FrontendSession.ringBytes(format, sizes[1]) + GuestMemory.PAGE);
            s.attach(memory);
            for (int size : sizes) {
                s.addRing(format, size, 0, DriverOptions.defaults(), true);
            }
            long pool = memory.carve(GuestMemory.PAGE, GuestMemory.PAGE);
            s.start();

            long region = InflightLayout.queueRegionBytes(format, sizes[0]);
            VhostUserFrontend.InflightArea area = s.inflightArea();
            assertNotNull(area, "one area for both rings");
            assertEquals(new InflightDescription(2 * region, 0, 2, sizes[0]), area.description());
            MemorySegment seen = Mmap.mapShared(area.fd(), area.description().mmapSize(), arena);
            assertEquals(2, device.startedByRing.size());

            ScatterGather sg = new ScatterGather(1);
            for (int r = 0; r < 2; r++) {
                DriverQueue driver = s.ring(r).queue();
                for (int k = 0; k < buffers; k++) {
                    driver.add(sg.clear().writable(memory.gpa(pool + slot(r, k)), 8), slot(r, k));
                }
                driver.kick();
            }
            // the back-end's queues take every buffer and write a value into it (ring, order taken): each region
            // marks that ring's buffers in flight
            MemorySegment value = arena.allocate(8);
            List<List<Integer>> popped = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                DeviceQueue queue = device.startedByRing.get(r).queue();
                List<Integer> ids = new ArrayList<>();
                DescriptorChain chain;
                while ((chain = queue.pop()) != null) {
                    value.set(ValueLayout.JAVA_LONG, 0, written(r, ids.size()));
                    assertEquals(8, chain.scatter(0, value, 0, 8));
                    ids.add(chain.head());
                }
                assertEquals(buffers, ids.size(), "ring " + r);
                popped.add(ids);
            }
            for (int r = 0; r < 2; r++) {
                MemorySegment mine = seen.asSlice(r * region, region);
                assertEquals(InflightLayout.VERSION, mine.get(ValueLayout.JAVA_SHORT_UNALIGNED, versionOffset(format)),
                        "ring " + r + " initialised its region");
                assertEquals(sizes[0], mine.get(ValueLayout.JAVA_SHORT_UNALIGNED, descNumOffset(format)),
                        "desc_num is the area's queue size (ring " + r + ")");
                assertEquals(popped.get(r), inFlightIds(format, mine, sizes[0]), "ring " + r + "'s region");
            }
            // the back-end returns them all: the regions clear them
            for (int r = 0; r < 2; r++) {
                DeviceQueue queue = device.startedByRing.get(r).queue();
                for (int id : popped.get(r)) {
                    queue.pushUsed(id, 8);
                }
                queue.flushUsed();
                assertEquals(List.of(), inFlightIds(format, seen.asSlice(r * region, region), sizes[0]), "ring " + r);
            }
            for (int r = 0; r < 2; r++) {
                DriverQueue driver = s.ring(r).queue();
                List<Object> back = new ArrayList<>();
                Object token;
                while ((token = driver.pollUsed()) != null) {
                    assertEquals(8, driver.lastUsedLength());
                    back.add(token);
                }
                assertEquals(List.of(slot(r, 0), slot(r, 1), slot(r, 2)), back, "ring " + r + ": each once, in order");
                for (int k = 0; k < buffers; k++) {
                    assertEquals(written(r, k), memory.memory().get(ValueLayout.JAVA_LONG_UNALIGNED, pool + slot(r, k)),
                            "ring " + r + " buffer " + k);
                }
            }
        }
    }

    /** What the back-end writes into the {@code k}th buffer it takes from ring {@code r}. */
    private static long written(int r, int k) {
        return 0x5A5A_0000_0000_0000L | (long) r << 32 | k;
    }

    private static int slot(int ring, int k) {
        return ring * 64 + k * 8;
    }

    private static int versionOffset(RingFormat format) {
        return format == RingFormat.PACKED ? InflightLayout.PACKED_VERSION : InflightLayout.SPLIT_VERSION;
    }

    private static int descNumOffset(RingFormat format) {
        return format == RingFormat.PACKED ? InflightLayout.PACKED_DESC_NUM : InflightLayout.SPLIT_DESC_NUM;
    }

    /**
     * The ids a region marks in flight, in entry order: split, the entry's index (the head); packed, the id copied
     * into the buffer's head entry.
     */
    private static List<Integer> inFlightIds(RingFormat format, MemorySegment region, int entries) {
        List<Integer> ids = new ArrayList<>();
        for (int e = 0; e < entries; e++) {
            if (format == RingFormat.PACKED) {
                long at = InflightLayout.PACKED_HEADER_SIZE + (long) e * InflightLayout.PACKED_ENTRY_SIZE;
                if (region.get(ValueLayout.JAVA_BYTE, at + InflightLayout.PACKED_ENTRY_INFLIGHT) != 0) {
                    ids.add(Short.toUnsignedInt(region.get(ValueLayout.JAVA_SHORT_UNALIGNED, at + InflightLayout.PACKED_ENTRY_ID)));
                }
            } else {
                long at = InflightLayout.SPLIT_HEADER_SIZE + (long) e * InflightLayout.SPLIT_ENTRY_SIZE;
                if (region.get(ValueLayout.JAVA_BYTE, at + InflightLayout.SPLIT_ENTRY_INFLIGHT) != 0) {
                    ids.add(e);
                }
            }
        }
        return ids;
    }
}
