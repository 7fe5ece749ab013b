package io.virtio4j.vhost.backend;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.testkit.FlightRecording;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.protocol.LogDescription;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.MemoryTableDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import io.virtio4j.vhost.protocol.VringAddress;
import io.virtio4j.vhost.protocol.VringFd;
import io.virtio4j.vhost.protocol.VringState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import jdk.jfr.consumer.RecordedEvent;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.virtio4j.vhost.backend.SessionMessages.message;
import static io.virtio4j.vhost.backend.SessionMessages.refused;
import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Dirty logging in the back-end's session: LOG_ALL and LOG_SHMFD offered only by a device that logs, SET_LOG_BASE
 * answered with a u64 and every refusal naming its field with every descriptor closed ({@link NoFdLeaks}), SET_LOG_FD
 * accepted and closed, and logging switched on and off under a started ring (SET_FEATURES with LOG_ALL alone,
 * SET_VRING_ADDR with the log flag alone) by restarting it, the ring resuming where it stood.
 */
@ExtendWith(NoFdLeaks.class)
class DirtyLogSessionTest {
    private static final long LOG_ALL = bit(ProtocolFeatures.VHOST_F_LOG_ALL);
    private static final long SPLIT = FakeDevice.FEATURES & ~VirtioFeatures.bit(VirtioFeatures.RING_PACKED)
            | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
    private static final long USER = 0x7000_0000_0000L;
    private static final long MEM = 64 * 1024;
    /** The used ring of ring 0 in guest-physical terms (the region starts at guest address 0). */
    private static final long USED_GPA = 0x2000;

    /** One queue; logs (LOG_ALL) unless told not to; records starts, stops and the contexts it is handed. */
    private static class Device extends RecordingDevice {
        final boolean logs;
        final List<Long> negotiations = new CopyOnWriteArrayList<>();

        Device(boolean logs) {
            this.logs = logs;
        }

        @Override
        public long features() {
            return FakeDevice.FEATURES | (logs ? LOG_ALL : 0);
        }

        @Override
        public int maxQueues() {
            return 1;
        }

        @Override
        public int maxQueueSize() {
            return 256;
        }

        @Override
        public void featuresNegotiated(long features) {
            negotiations.add(features);
        }
    }

    private static VhostUserSession negotiated(Device device) throws VhostUserProtocolException {
        return negotiated(device, SPLIT);
    }

    private static VhostUserSession negotiated(Device device, long features) throws VhostUserProtocolException {
        return SessionMessages.negotiated(device, bit(ProtocolFeatures.LOG_SHMFD) | bit(ProtocolFeatures.REPLY_ACK),
                features);
    }

    private static Message logBase(long size, long offset, FileDescriptor... fds) {
        return message(Request.SET_LOG_BASE, new LogDescription(size, offset).encode(), fds);
    }

    /** Maps the 64 KiB guest memory and starts ring 0 (size 8, polled) with {@code addrFlags} and {@code log}. */
    private static void startRing(VhostUserSession s, long addrFlags, long log) throws VhostUserProtocolException {
        s.handle(message(Request.SET_MEM_TABLE, new MemoryTableDescription(List.of(
                new MemoryRegionDescription(0, MEM, USER, 0))).encode(), Memfd.create("guest", MEM)));
        s.handle(message(Request.SET_VRING_NUM, new VringState(0, 8).encode()));
        s.handle(message(Request.SET_VRING_ADDR, new VringAddress(0, addrFlags, USER, USER + USED_GPA, USER + 0x1000, log).encode()));
        s.handle(message(Request.SET_VRING_KICK, new VringFd(0, true).encode()));
        s.handle(message(Request.SET_VRING_ENABLE, new VringState(0, 1).encode()));
    }

    private static Message addr(long flags, long desc, long log) {
        return message(Request.SET_VRING_ADDR, new VringAddress(0, flags, desc, USER + USED_GPA, USER + 0x1000, log).encode());
    }

    // ---- what is offered ----

    @Test
    void aDeviceThatLogsOffersLogAllAndTheSessionLogShmfd() throws Exception {
        try (VhostUserSession s = new VhostUserSession(new Device(true), BackendOptions.defaults());
             VhostUserSession not = new VhostUserSession(new Device(false), BackendOptions.defaults())) {
            assertTrue((U64.decode("r", MemorySegment.ofArray(s.handle(message(Request.GET_FEATURES, new byte[0])))).value() & LOG_ALL) != 0);
            assertTrue((U64.decode("r", MemorySegment.ofArray(s.handle(message(Request.GET_PROTOCOL_FEATURES, new byte[0])))).value()
                    & bit(ProtocolFeatures.LOG_SHMFD)) != 0);
            assertEquals(0, U64.decode("r", MemorySegment.ofArray(not.handle(message(Request.GET_PROTOCOL_FEATURES, new byte[0])))).value()
                    & bit(ProtocolFeatures.LOG_SHMFD), "a device that does not mark its writes is not offered logging");
            refused(not, message(Request.SET_PROTOCOL_FEATURES, new U64(bit(ProtocolFeatures.LOG_SHMFD)).encode()),
                    "protocol_features", bit(ProtocolFeatures.LOG_SHMFD));
        }
    }

    // ---- SET_LOG_BASE, SET_LOG_FD ----

    @Test
    void setLogBaseIsAnsweredWithAU64AndClosesTheFd() throws Exception {
        try (VhostUserSession s = negotiated(new Device(true))) {
            FileDescriptor fd = Memfd.create("log", 8192);
            byte[] reply = s.handle(logBase(4096, 4096, fd));
            assertArrayEquals(new U64(0).encode(), reply);
            assertFalse(fd.isOpen(), "the log's fd is closed once mapped");
        }
    }

    @Test
    void setLogBaseRefusesAnEmptyLog() throws Exception {
        try (VhostUserSession s = negotiated(new Device(true))) {
            refused(s, logBase(0, 0, Memfd.create("log", 4096)), "mmap_size", 0);
        }
    }

    @Test
    void setLogBaseRefusesASizeBeyondTheFd() throws Exception {
        try (VhostUserSession s = negotiated(new Device(true))) {
            refused(s, logBase(4097, 0, Memfd.create("log", 4096)), "mmap_size", 4097);
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 4096, Long.MAX_VALUE, -4096, Long.MIN_VALUE})
    void setLogBaseRefusesAnOffsetWhoseEndIsPastTheFdOrOverflows(long offset) throws Exception {
        try (VhostUserSession s = negotiated(new Device(true))) {
            refused(s, logBase(4096, offset, Memfd.create("log", 4096)), "mmap_offset", offset);
        }
    }

    @Test
    void setLogBaseRefusesAMessageWithoutAnFd() throws Exception {
        try (VhostUserSession s = negotiated(new Device(true))) {
            refused(s, logBase(4096, 0), "fds", 0);
        }
    }

    @Test
    void setLogBaseRefusesTwoFdsAndClosesBoth() throws Exception {
        try (VhostUserSession s = negotiated(new Device(true))) {
            refused(s, logBase(4096, 0, Memfd.create("a", 4096), Memfd.create("b", 4096)), "fds", 2);
        }
    }

    @Test
    void setLogBaseIsRefusedWithoutLogShmfdAndItsFdClosed() throws Exception {
        try (VhostUserSession s = SessionMessages.negotiated(new Device(true), bit(ProtocolFeatures.REPLY_ACK), SPLIT)) {
            refused(s, logBase(4096, 0, Memfd.create("log", 4096)), "protocol_features", bit(ProtocolFeatures.REPLY_ACK));
        }
    }

    @Test
    void aRefusedSetLogBaseHasNoReplyOfItsOwnSoTheConnectionCloses() {
        assertNull(VhostUserSession.failureReply(logBase(0, 0)),
                "a u64 QEMU ignores cannot say failed: the connection closes rather than leave it believing logging is on");
    }

    @Test
    void setLogFdIsAcceptedAndItsFdClosed() throws Exception {
        try (VhostUserSession s = negotiated(new Device(true))) {
            assertNull(s.handle(message(Request.SET_LOG_FD, new byte[0], Memfd.create("eventfd-ish", 0))));
        }
    }

    // ---- switching logging under a started ring ----

    @Test
    void logAllAloneOnAStartedRingRestartsItLoggingAndBackAgain() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device)) {
            startRing(s, 0, 0);
            assertEquals(List.of("start 0"), device.calls);
            assertNull(device.started.getLast().dirtyLog(), "not logging: no log, no LOG_ALL");
            s.handle(logBase(4096, 0, Memfd.create("log", 4096)));
            assertEquals(List.of("start 0"), device.calls, "a log without LOG_ALL changes nothing on the ring");
            int negotiations = device.negotiations.size();

            s.handle(message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode()));
            assertEquals(List.of("start 0", "stop 0", "start 0"), device.calls, "restarted to log");
            DirtyLog log = device.started.getLast().dirtyLog();
            assertNotNull(log, "the device marks its writes from the restart on");
            assertEquals(4096 * 8, log.pages());
            assertEquals(negotiations, device.negotiations.size(), "LOG_ALL alone is not a new negotiation for the device");

            s.handle(message(Request.SET_FEATURES, new U64(SPLIT).encode()));
            assertEquals(List.of("start 0", "stop 0", "start 0", "stop 0", "start 0"), device.calls);
            assertNull(device.started.getLast().dirtyLog(), "logging off again");
        }
    }

    @Test
    void anyOtherFeatureChangeOnAStartedRingIsStillRefused() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device)) {
            startRing(s, 0, 0);
            long other = SPLIT & ~VirtioFeatures.bit(VirtioFeatures.EVENT_IDX);
            refused(s, message(Request.SET_FEATURES, new U64(other | LOG_ALL).encode()), "features", other | LOG_ALL);
            assertEquals(List.of("start 0"), device.calls, "the ring runs on");
        }
    }

    @Test
    void theLogFlagAloneOnAStartedRingRestartsItAndMovedAreasAreStillRefused() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device)) {
            s.handle(logBase(4096, 0, Memfd.create("log", 4096)));
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode()));
            startRing(s, 0, 0);
            assertEquals(List.of("start 0"), device.calls);
            s.handle(addr(VringAddress.F_LOG, USER, USED_GPA));
            assertEquals(List.of("start 0", "stop 0", "start 0"), device.calls, "restarted to log its used ring");
            refused(s, addr(VringAddress.F_LOG, USER + 0x100, USED_GPA), "index", 0);
            assertEquals(3, device.calls.size(), "a ring's areas cannot move under it");
        }
    }

    @Test
    void aUsedRingTheLogDoesNotCoverIsRefusedNamingItsLogAddress() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device)) {
            s.handle(logBase(8, 0, Memfd.create("log", 4096))); // 64 pages: 256 KiB
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode()));
            startRing(s, 0, 0);
            long past = 64 * DirtyLog.PAGE_SIZE - 8; // the used ring's first bytes in page 63, the rest in page 64
            refused(s, addr(VringAddress.F_LOG, USER, past), "vring[0].log", past);
            assertEquals(List.of("start 0", "stop 0"), device.calls, "stopped, and not started on a log it would overflow");
        }
    }

    /**
     * A split used ring that ends at the last byte the log covers: without EVENT_IDX its avail_event is never
     * written, so it is not counted (as QEMU sizes its log) and the ring starts logging; with EVENT_IDX those 2 bytes
     * are past the log and the ring is refused.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aUsedRingsAvailEventCountsForTheLogOnlyWithEventIdx(boolean eventIdx) throws Exception {
        Device device = new Device(true);
        long features = eventIdx ? SPLIT : SPLIT & ~VirtioFeatures.bit(VirtioFeatures.EVENT_IDX);
        try (VhostUserSession s = negotiated(device, features)) {
            s.handle(logBase(8, 0, Memfd.create("log", 4096))); // 64 pages: 256 KiB
            s.handle(message(Request.SET_FEATURES, new U64(features | LOG_ALL).encode()));
            startRing(s, 0, 0);
            long end = 64 * DirtyLog.PAGE_SIZE - (4 + 8 * 8); // flags, idx and 8 elements end the log, avail_event past
            if (eventIdx) {
                refused(s, addr(VringAddress.F_LOG, USER, end), "vring[0].log", end);
                assertEquals(List.of("start 0", "stop 0"), device.calls);
            } else {
                s.handle(addr(VringAddress.F_LOG, USER, end));
                assertEquals(List.of("start 0", "stop 0", "start 0"), device.calls);
                assertNotNull(device.started.getLast().dirtyLog(), "logging");
            }
        }
    }

    /**
     * SET_FEATURES with LOG_ALL whose ring fails to restart (its used ring past the log) is refused, yet the features
     * are committed in the session as in the ring table: FEATURES_OK then stays in the status, and clearing LOG_ALL
     * again is the log switch it is (no new negotiation for the device), not a change of features.
     */
    @Test
    void aLogSwitchWhoseRingFailsToRestartLeavesTheFeaturesCommittedEverywhere() throws Exception {
        Device device = new Device(true);
        long protocol = bit(ProtocolFeatures.LOG_SHMFD) | bit(ProtocolFeatures.REPLY_ACK) | bit(ProtocolFeatures.STATUS);
        try (VhostUserSession s = SessionMessages.negotiated(device, protocol, SPLIT)) {
            s.handle(logBase(8, 0, Memfd.create("log", 4096))); // 64 pages: 256 KiB
            long past = 64 * DirtyLog.PAGE_SIZE - 8; // the used ring's first bytes in page 63, the rest in page 64
            startRing(s, VringAddress.F_LOG, past);
            int negotiations = device.negotiations.size();
            refused(s, message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode()), "vring[0].log", past);
            assertEquals(List.of("start 0", "stop 0"), device.calls, "stopped, not started on a log it would overflow");

            s.handle(message(Request.SET_STATUS, new U64(VhostUserSession.STATUS_FEATURES_OK).encode()));
            assertEquals(VhostUserSession.STATUS_FEATURES_OK,
                    U64.decode("GET_STATUS", MemorySegment.ofArray(s.handle(message(Request.GET_STATUS, new byte[0]))))
                            .value(), "the features were accepted");
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT).encode()));
            assertEquals(negotiations, device.negotiations.size(), "LOG_ALL alone cleared: no new negotiation");
        }
    }

    /**
     * QEMU stopping and starting a vhost-user-net device while migrating (a guest resetting its NIC): the rings stop
     * with GET_VRING_BASE (not disabled: vrings=false) and QEMU frees its log; the start sends the ring's setup with
     * the log flag and its kick before the new SET_LOG_BASE. The ring is held back at its kick rather than started on
     * the old log, and starts on the new one when it arrives.
     */
    @Test
    void aRingRestartedAfterEveryRingStoppedWhileLoggingWaitsForTheNewLog() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device)) {
            s.handle(logBase(4096, 0, Memfd.create("log", 4096)));
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode()));
            startRing(s, VringAddress.F_LOG, USED_GPA);
            assertEquals(List.of("start 0"), device.calls);

            s.handle(message(Request.GET_VRING_BASE, new VringState(0, 0).encode()));
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode()));
            s.handle(message(Request.SET_VRING_NUM, new VringState(0, 8).encode()));
            s.handle(message(Request.SET_VRING_BASE, new VringState(0, 0).encode()));
            s.handle(addr(VringAddress.F_LOG, USER, USED_GPA));
            s.handle(message(Request.SET_VRING_KICK, new VringFd(0, true).encode()));
            assertEquals(List.of("start 0", "stop 0"), device.calls, "held back: the old log is no longer read");

            s.handle(logBase(8192, 0, Memfd.create("new", 8192)));
            assertEquals(List.of("start 0", "stop 0", "start 0"), device.calls, "started on the new log");
            assertEquals(8192 * 8, device.started.getLast().dirtyLog().pages());
        }
    }

    /**
     * DirtyLoggingSwitched says whether rings have a log to mark: yes when LOG_ALL goes on over a fresh log, no when
     * it goes off after every ring stopped while logging (the front-end dropped that log), though it is still mapped.
     */
    @Test
    void aLogSwitchOverAStaleLogSaysNoLogIsMapped(@TempDir Path dir) throws Exception {
        Device device = new Device(true);
        List<RecordedEvent> events;
        try (FlightRecording recording = FlightRecording.start();
             VhostUserSession s = negotiated(device)) {
            s.handle(logBase(4096, 0, Memfd.create("log", 4096)));
            startRing(s, VringAddress.F_LOG, USED_GPA);
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode())); // on, over the fresh log
            s.handle(message(Request.GET_VRING_BASE, new VringState(0, 0).encode())); // every ring stopped: stale
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT).encode())); // off, over the stale log
            events = recording.stop(dir.resolve("switch.jfr"));
        }
        List<RecordedEvent> switched = FlightRecording.named(events.stream()
                .filter(FlightRecording.on(Thread.currentThread().getName())).toList(), "DirtyLoggingSwitched");
        assertEquals(List.of("on=true mapped=true", "on=false mapped=false"), switched.stream()
                .map(e -> "on=" + e.getBoolean("on") + " mapped=" + e.getBoolean("logMapped")).toList());
    }

    /** Without LOG_ALL a stop and start needs no new log: the ring starts at its kick as ever. */
    @Test
    void aRingRestartedAfterEveryRingStoppedWithoutLogAllStartsAtItsKick() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device)) {
            s.handle(logBase(4096, 0, Memfd.create("log", 4096)));
            startRing(s, VringAddress.F_LOG, USED_GPA);
            s.handle(message(Request.GET_VRING_BASE, new VringState(0, 0).encode()));
            s.handle(message(Request.SET_VRING_KICK, new VringFd(0, true).encode()));
            assertEquals(List.of("start 0", "stop 0", "start 0"), device.calls);
        }
    }

    @Test
    void aNewLogBaseWhileLoggingRestartsTheRingOverIt() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device)) {
            s.handle(logBase(4096, 0, Memfd.create("log", 4096)));
            s.handle(message(Request.SET_FEATURES, new U64(SPLIT | LOG_ALL).encode()));
            startRing(s, VringAddress.F_LOG, USED_GPA);
            DirtyLog first = device.started.getLast().dirtyLog();
            s.handle(logBase(8192, 0, Memfd.create("bigger", 8192)));
            assertEquals(List.of("start 0", "stop 0", "start 0"), device.calls);
            DirtyLog second = device.started.getLast().dirtyLog();
            assertEquals(8192 * 8, second.pages());
            assertFalse(first == second, "the ring marks in the new log");
        }
    }

    // ---- packed rings ----

    private static final long PACKED = FakeDevice.FEATURES | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);

    /** Maps the 64 KiB guest memory at guest-physical {@code gpa} and starts packed ring 0 (size 8) logging. */
    private static void startPackedLogging(VhostUserSession s, long gpa, long eventLog) throws VhostUserProtocolException {
        s.handle(message(Request.SET_MEM_TABLE, new MemoryTableDescription(List.of(
                new MemoryRegionDescription(gpa, MEM, USER, 0))).encode(), Memfd.create("guest", MEM)));
        s.handle(message(Request.SET_VRING_NUM, new VringState(0, 8).encode()));
        s.handle(message(Request.SET_VRING_BASE, new VringState(0, 0x8000_8000L).encode()));
        s.handle(message(Request.SET_VRING_ADDR, new VringAddress(0, VringAddress.F_LOG, USER, USER + 0x2000, USER + 0x1000,
                eventLog).encode()));
        s.handle(message(Request.SET_VRING_KICK, new VringFd(0, true).encode()));
        s.handle(message(Request.SET_VRING_ENABLE, new VringState(0, 1).encode()));
    }

    @Test
    void aPackedRingLogsItsDescriptorRingAtTheGuestAddressItsRegionMapsItTo() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device, PACKED | LOG_ALL)) {
            s.handle(logBase(64, 0, Memfd.create("log", 4096))); // 512 pages: 2 MiB
            startPackedLogging(s, 0x10_0000, 0x10_2000);
            assertEquals(List.of("start 0"), device.calls);
            assertNotNull(device.started.getLast().dirtyLog());
        }
    }

    @Test
    void aPackedDescriptorRingTheLogDoesNotCoverIsRefusedNamingIt() throws Exception {
        Device device = new Device(true);
        try (VhostUserSession s = negotiated(device, PACKED | LOG_ALL)) {
            s.handle(logBase(8, 0, Memfd.create("log", 4096))); // 64 pages: 256 KiB
            // the device area's log address is covered, but the descriptor ring lies at guest-physical 1 MiB
            VhostUserProtocolException e = assertThrows(VhostUserProtocolException.class,
                    () -> startPackedLogging(s, 0x10_0000, 0x2000));
            assertEquals("vring[0].desc", e.field(), e.getMessage());
            assertEquals(USER, e.value());
            assertFalse(device.calls.contains("start 0"));
        }
    }
}
