package io.virtio4j.vhost.backend;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.List;
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
 * offered (unless told not to), gets an area at the first start and keeps it over stops and starts, drops it on a
 * reset (a fresh one at the next start) and closes its fd with the session.
 */
@ExtendWith(NoFdLeaks.class)
class FrontendInflightTest {
    private static final long FEATURES = VirtioFeatures.bit(VirtioFeatures.VERSION_1);

    /**
     * Two queues, MQ, RESET_DEVICE (the session's) and, if {@code inflight}, INFLIGHT_SHMFD; records starts. The first
     * {@code noArea} GET_INFLIGHT_FDs find no area to give: the device's queue size is then 32 for them (what the
     * back-end checks the question against), smaller than the rings', as if it could not make one then.
     */
    private static final class Device extends RecordingDevice {
        private final boolean inflight;
        private final AtomicInteger noArea;

        Device(boolean inflight) {
            this(inflight, 0);
        }

        Device(boolean inflight, int noArea) {
            this.inflight = inflight;
            this.noArea = new AtomicInteger(noArea);
        }

        /** Asked at each GET_INFLIGHT_FD, SET_INFLIGHT_FD and SET_VRING_NUM; FrontendSession sends GET first. */
        @Override
        public int maxQueueSize() {
            return noArea.getAndUpdate(n -> Math.max(0, n - 1)) > 0 ? 32 : 1024;
        }

        @Override
        public long features() {
            return FEATURES;
        }

        @Override
        public long protocolFeatures() {
            return bit(ProtocolFeatures.MQ) | (inflight ? bit(ProtocolFeatures.INFLIGHT_SHMFD) : 0);
        }

        @Override
        public int maxQueues() {
            return 2;
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

    /** One area has one queue size: rings of two sizes cannot share one, and the start says how to go on. */
    @Test
    void ringsOfDifferentSizesAreRefusedAtStart() {
        InProcessBackend.Connected c = InProcessBackend.start(new Device(true), "inflight-sizes");
        try (FrontendSession s = FrontendSession.over(c.frontend())) {
            s.negotiate(FEATURES, FEATURES, FrontendSession.PROTOCOL_FEATURES, 0, 2);
            s.attach(GuestMemory.create("inflight-sizes", FrontendSession.ringBytes(RingFormat.SPLIT, 64)
                    + FrontendSession.ringBytes(RingFormat.SPLIT, 32)));
            s.addRing(RingFormat.SPLIT, 64, 0, DriverOptions.defaults(), true);
            s.addRing(RingFormat.SPLIT, 32, 0, DriverOptions.defaults(), true);
            IllegalStateException e = assertThrows(IllegalStateException.class, s::start);
            assertTrue(e.getMessage().contains("useInflight(false)"), e.getMessage());
        }
    }
}
