package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.vhost.protocol.ConfigPayload;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.SingleMemoryRegion;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static io.virtio4j.vhost.backend.SessionMessages.message;
import static io.virtio4j.vhost.backend.SessionMessages.refused;
import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The session answers from the device SPI, not from what it knows of any device type: protocol features,
 * the GET_QUEUE_NUM count, the configuration space and its writes. Requests go straight to
 * {@link VhostUserSession#handle}; framing and sockets are the connection's and are tested elsewhere.
 */
class VhostUserSessionTest {
    private static final long ALL_SESSION_AND_DEVICE = ProtocolFeatures.SESSION | ProtocolFeatures.DEVICE_DECLARABLE;

    /** A device of four rings with an 8-byte config space that keeps every default of the SPI. */
    private static class DefaultsDevice implements VirtioDevice {
        @Override
        public long features() {
            return FakeDevice.FEATURES;
        }

        @Override
        public int maxQueues() {
            return 4;
        }

        @Override
        public byte[] config() {
            return new byte[] {1, 2, 3, 4, 5, 6, 7, 8};
        }

        @Override
        public void startQueue(int index, QueueContext queue) {
        }

        @Override
        public void stopQueue(int index) {
        }
    }

    /** Declares MQ and CONFIG (or what a test sets) and reports two queues; config writes keep the default. */
    private static class Device extends DefaultsDevice {
        long protocolFeatures = ProtocolFeatures.DEVICE_DECLARABLE;

        @Override
        public long protocolFeatures() {
            return protocolFeatures;
        }

        @Override
        public int reportedQueueCount() {
            return 2;
        }
    }

    /** A device whose config byte 4 is writable. */
    private static final class WritableDevice extends Device {
        final List<String> writes = new ArrayList<>();

        @Override
        public void setConfig(long offset, byte[] data, long flags) throws ConfigWriteRefusedException {
            if (offset != 4 || data.length != 1) {
                throw new ConfigWriteRefusedException(offset, data.length, "only byte 4 is writable");
            }
            writes.add(offset + ":" + data[0] + ":" + flags);
        }
    }

    private static long u64(byte[] reply) throws VhostUserProtocolException {
        return U64.decode("reply", MemorySegment.ofArray(reply)).value();
    }

    private static VhostUserSession negotiated(VirtioDevice device, long protocolFeatures) throws VhostUserProtocolException {
        VhostUserSession s = new VhostUserSession(device, BackendOptions.defaults());
        assertNull(s.handle(message(Request.SET_PROTOCOL_FEATURES, new U64(protocolFeatures).encode())));
        return s;
    }

    @Test
    void protocolFeaturesAreTheSessionsAndTheDevicesOnly() throws Exception {
        try (VhostUserSession s = new VhostUserSession(new DefaultsDevice(), BackendOptions.defaults())) {
            long offered = ProtocolFeatures.SESSION | bit(ProtocolFeatures.MQ);
            assertEquals(offered, u64(s.handle(message(Request.GET_PROTOCOL_FEATURES, new byte[0]))));
            long withConfig = offered | bit(ProtocolFeatures.CONFIG);
            refused(s, message(Request.SET_PROTOCOL_FEATURES, new U64(withConfig).encode()), "protocol_features", withConfig);
        }
        try (VhostUserSession s = new VhostUserSession(new Device(), BackendOptions.defaults())) {
            assertEquals(ALL_SESSION_AND_DEVICE, u64(s.handle(message(Request.GET_PROTOCOL_FEATURES, new byte[0]))));
        }
    }

    @Test
    void aDeviceDeclaringAProtocolFeatureTheSessionDoesNotServeIsRefused() {
        Device d = new Device();
        d.protocolFeatures = bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.LOG_SHMFD);
        assertThrows(IllegalArgumentException.class, () -> new VhostUserSession(d, BackendOptions.defaults()));
    }

    /** RESET_DEVICE resets the device's queues and its configuration; a connection's end its queues only. */
    @Test
    void onlyResetDeviceResetsTheDevicesConfiguration() throws Exception {
        List<String> calls = new ArrayList<>();
        Device d = new Device() {
            @Override
            public void reset() {
                calls.add("reset");
            }

            @Override
            public void resetConfig() {
                calls.add("resetConfig");
            }
        };
        VhostUserSession s = negotiated(d, ALL_SESSION_AND_DEVICE);
        assertNull(s.handle(message(Request.RESET_DEVICE, new byte[0])));
        assertEquals(List.of("reset", "resetConfig"), calls);
        calls.clear();
        s.close();
        assertEquals(List.of("reset"), calls);
    }

    @Test
    void getQueueNumReportsTheDevicesCount() throws Exception {
        try (VhostUserSession s = negotiated(new Device(), ALL_SESSION_AND_DEVICE)) {
            assertEquals(2, u64(s.handle(message(Request.GET_QUEUE_NUM, new byte[0]))));
        }
        try (VhostUserSession s = negotiated(new DefaultsDevice(), bit(ProtocolFeatures.MQ))) {
            assertEquals(4, u64(s.handle(message(Request.GET_QUEUE_NUM, new byte[0]))), "by default: the rings");
        }
        try (VhostUserSession s = negotiated(new Device(), ProtocolFeatures.SESSION)) {
            refused(s, message(Request.GET_QUEUE_NUM, new byte[0]), "protocol_features", ProtocolFeatures.SESSION);
        }
    }

    @Test
    void getConfigReadsTheDevicesConfigSpaceAndZerosBeyondIt() throws Exception {
        try (VhostUserSession s = negotiated(new Device(), ALL_SESSION_AND_DEVICE)) {
            byte[] reply = s.handle(message(Request.GET_CONFIG, new ConfigPayload(6, 0, new byte[4]).encode()));
            ConfigPayload c = ConfigPayload.decode("reply", MemorySegment.ofArray(reply));
            assertEquals(6, c.offset());
            assertArrayEquals(new byte[] {7, 8, 0, 0}, c.data());
        }
    }

    @Test
    void setConfigReachesTheDevice() throws Exception {
        WritableDevice d = new WritableDevice();
        try (VhostUserSession s = negotiated(d, ALL_SESSION_AND_DEVICE)) {
            assertNull(s.handle(message(Request.SET_CONFIG, new ConfigPayload(4, 0, new byte[] {9}).encode())));
            assertEquals(List.of("4:9:0"), d.writes);
            VhostUserProtocolException e = refused(s,
                    message(Request.SET_CONFIG, new ConfigPayload(0, 0, new byte[] {9}).encode()), "offset", 0);
            assertInstanceOf(ConfigWriteRefusedException.class, e.getCause());
            assertEquals(List.of("4:9:0"), d.writes);
        }
    }

    @Test
    void byDefaultConfigWritesAreRefusedAndMigrationHasNothingToRestore() throws Exception {
        try (VhostUserSession s = negotiated(new Device(), ALL_SESSION_AND_DEVICE)) {
            VhostUserProtocolException e = refused(s,
                    message(Request.SET_CONFIG, new ConfigPayload(2, ConfigPayload.FLAG_WRITABLE, new byte[2]).encode()),
                    "offset", 2);
            assertInstanceOf(ConfigWriteRefusedException.class, e.getCause());
            assertNull(s.handle(message(Request.SET_CONFIG,
                    new ConfigPayload(2, ConfigPayload.FLAG_MIGRATION, new byte[2]).encode())));
        }
    }

    @Test
    void addMemRegWithoutItsDescriptorIsRefused() throws Exception {
        try (VhostUserSession s = negotiated(new Device(), ALL_SESSION_AND_DEVICE)) {
            byte[] p = new SingleMemoryRegion(new MemoryRegionDescription(0, 0x10000, 0x7000_0000_0000L, 0)).encode();
            refused(s, message(Request.ADD_MEM_REG, p), "fds", 0);
        }
    }
}
