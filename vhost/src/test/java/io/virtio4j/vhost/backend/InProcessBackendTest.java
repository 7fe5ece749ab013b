package io.virtio4j.vhost.backend;

import io.virtio4j.os.LinuxException;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.frontend.VhostUserRequestFailedException;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link InProcessBackend}: a device the session refuses ends the connection; the front-end is not left waiting. */
class InProcessBackendTest {
    /** Bounds the front-end's wait: without the fix it waits for ever for an answer that never comes. */
    private static final Duration BOUND = Duration.ofSeconds(20);

    /** A device that declares REPLY_ACK, which only the session may offer: refused at session creation. */
    private static final class DeclaresReplyAck implements VirtioDevice {
        @Override
        public long features() {
            return FakeDevice.FEATURES;
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

    /**
     * The back-end thread ends and names why; the front-end's GET_FEATURES then fails (its socket's peer is
     * closed: EPIPE) instead of waiting for a reply.
     */
    @Test
    void aRefusedDeviceClosesTheBackendEndSoTheFrontendGetsAnError() {
        // all on the bounding thread: the front-end's buffers are confined to the thread that made it
        assertTimeoutPreemptively(BOUND, () -> {
            InProcessBackend.Connected c = InProcessBackend.start(new DeclaresReplyAck(), "refused");
            try (VhostUserFrontend fe = c.frontend()) {
                IllegalStateException ended = assertThrows(IllegalStateException.class, c.backend()::awaitEnd);
                assertInstanceOf(IllegalArgumentException.class, ended.getCause());
                assertTrue(ended.getCause().getMessage().contains("protocol features 0x8"),
                        ended.getCause().getMessage());
                LinuxException e = assertThrows(LinuxException.class, fe::getFeatures);
                assertEquals("EPIPE", e.errnoName());
            }
        });
    }

    /**
     * The same when the front-end asks first: its request is in flight when the back-end end closes; the reply
     * never comes and the front-end sees the connection closed.
     */
    @Test
    void aFrontendAlreadyWaitingForGetFeaturesGetsAnError() {
        assertTimeoutPreemptively(BOUND, () -> {
            InProcessBackend.Connected c = InProcessBackend.start(new DeclaresReplyAck(), "refused");
            try (VhostUserFrontend fe = c.frontend()) {
                RuntimeException e = assertThrows(RuntimeException.class, fe::getFeatures);
                // which of the two depends on whether the back-end closed before or after the request was sent
                assertTrue(e instanceof VhostUserRequestFailedException || e instanceof LinuxException, e.toString());
                assertEquals(IllegalArgumentException.class,
                        assertThrows(IllegalStateException.class, c.backend()::awaitEnd).getCause().getClass());
            }
        });
    }
}
