package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.testkit.FlightRecording;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.SingleMemoryRegion;
import io.virtio4j.vhost.protocol.U64;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

import static io.virtio4j.testkit.FlightRecording.named;
import static io.virtio4j.vhost.backend.SessionMessages.message;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The session's and the connection's JFR events for what a blk session's life in devices' BlkSessionEventsTest does
 * not reach: memory regions added and removed one by one (CONFIGURE_MEM_SLOTS), and a message so malformed that the
 * connection closes.
 */
class SessionEventsTest {
    private static final long USER = 0x7000_0000_0000L;

    @TempDir
    Path dir;

    @Test
    void regionsAddedAndRemovedAreEachATableChange() throws Exception {
        long page = Mmap.pageSize();
        List<RecordedEvent> events;
        try (FlightRecording recording = FlightRecording.start();
             VhostUserSession s = new VhostUserSession(new FakeDevice(2), BackendOptions.defaults())) {
            assertNull(s.handle(message(Request.SET_PROTOCOL_FEATURES, new U64(ProtocolFeatures.SESSION).encode())));
            for (int i = 0; i < 2; i++) {
                FileDescriptor fd = Memfd.create("region-" + i, (i + 1) * page);
                assertNull(s.handle(message(Request.ADD_MEM_REG, new SingleMemoryRegion(new MemoryRegionDescription(
                        4 * i * page, (i + 1) * page, USER + 4 * i * page, 0)).encode(), fd)));
            }
            assertNull(s.handle(message(Request.REM_MEM_REG,
                    new SingleMemoryRegion(new MemoryRegionDescription(0, page, USER, 0)).encode())));
            events = recording.stop(dir.resolve("regions.jfr"));
        }
        List<RecordedEvent> ours = events.stream().filter(FlightRecording.on(Thread.currentThread().getName())).toList();
        RecordedEvent protocol = named(ours, "FeaturesNegotiated").getFirst();
        assertEquals("SET_PROTOCOL_FEATURES", protocol.getString("request"));
        assertEquals(ProtocolFeatures.SESSION, protocol.getLong("protocolFeatures"));
        assertEquals(0, protocol.getLong("features"), "no SET_FEATURES yet");
        List<RecordedEvent> tables = named(ours, "MemoryTableChanged");
        assertEquals(List.of("ADD_MEM_REG", "ADD_MEM_REG", "REM_MEM_REG"), tables.stream().map(e -> e.getString("request")).toList());
        assertEquals(List.of(1, 2, 1), tables.stream().map(e -> e.getInt("regions")).toList());
        assertEquals(List.of(page, 3 * page, 2 * page), tables.stream().map(e -> e.getLong("totalBytes")).toList());
    }

    @Test
    void aMessageThatCannotBeAnsweredIsRejectedAndTheConnectionCloses() throws Exception {
        String name = "events-" + UUID.randomUUID();
        List<RecordedEvent> events;
        try (FlightRecording recording = FlightRecording.start()) {
            InProcessBackend.Connected c = InProcessBackend.start(new FakeDevice(1), name);
            try (VhostUserFrontend fe = c.frontend()) {
                assertTrue(fe.getFeatures() != 0);
                // version bits 2: the stream cannot be trusted any more, the back-end closes
                fe.sendRaw(Request.GET_FEATURES.code(), 2, new byte[0]);
                assertNull(fe.receive(), "the back-end closed the connection");
            }
            assertEquals(VhostUserConnection.End.PROTOCOL_ERROR, c.backend().awaitEnd());
            events = recording.stop(dir.resolve("rejected.jfr"));
        }
        List<RecordedEvent> ours = events.stream().filter(FlightRecording.on(name)).toList();
        assertEquals(name, named(ours, "FrontendConnected").getFirst().getString("peer"));
        RecordedEvent rejected = named(ours, "RequestRejected").getFirst();
        assertEquals(name, rejected.getString("peer"));
        assertEquals("GET_FEATURES", rejected.getString("request"));
        assertEquals("flags", rejected.getString("field"));
        assertEquals(2, rejected.getLong("value"));
        assertTrue(rejected.getBoolean("closed"), rejected::toString);
        RecordedEvent gone = named(ours, "FrontendDisconnected").getFirst();
        assertEquals("PROTOCOL_ERROR", gone.getString("end"));
        assertEquals(1, gone.getLong("messages"), "GET_FEATURES answered; the malformed one is not counted");
        assertEquals(3, ours.size(), ours::toString);
    }
}
