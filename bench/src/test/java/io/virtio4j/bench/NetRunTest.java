package io.virtio4j.bench;

import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The end of a bench run's connection: when the run already failed, a connection that failed too is added to the
 * run's failure, not put in its place (the root cause, a stall or the driver's exception, is what gets reported).
 */
class NetRunTest {
    /** A device that declares REPLY_ACK, which only the session may offer: its connection thread fails at once. */
    private static final class Refused implements VirtioDevice {
        @Override
        public long features() {
            return 1L << 32;
        }

        @Override
        public long protocolFeatures() {
            return ProtocolFeatures.bit(ProtocolFeatures.REPLY_ACK);
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
            throw new AssertionError("a refused device is never started");
        }

        @Override
        public void stopQueue(int index) {
        }
    }

    @Test
    @Timeout(60)
    void aConnectionFailureIsAddedToTheRunsFailureAndThrownOnlyWithoutOne() throws Exception {
        InProcessBackend.Connected c = InProcessBackend.start(new Refused(), "net-run-test");
        try (VhostUserFrontend fe = c.frontend()) {
            BenchmarkStalledException stall = new BenchmarkStalledException("vhost-user driver did not finish");
            NetRun.awaitEnd(c.backend(), stall);
            assertEquals(1, stall.getSuppressed().length, "the connection's failure rides along");
            assertTrue(stall.getSuppressed()[0].getMessage().contains("connection thread failed"),
                    stall.getSuppressed()[0].getMessage());
            IllegalStateException alone = assertThrows(IllegalStateException.class, () -> NetRun.awaitEnd(c.backend(), null));
            assertSame(IllegalArgumentException.class, alone.getCause().getClass(), "no run failure: it is the failure");
        }
    }
}
