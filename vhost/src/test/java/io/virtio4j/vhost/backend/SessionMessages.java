package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Requests handed straight to {@link VhostUserSession#handle}, without a socket, and the check that one is refused:
 * the steps the session tests share.
 */
final class SessionMessages {
    private SessionMessages() {
    }

    static Message message(Request r, byte[] payload, FileDescriptor... fds) {
        return new Message(r.code(), ProtocolFeatures.VERSION, MemorySegment.ofArray(payload), fds);
    }

    /** A session for {@code device} past SET_PROTOCOL_FEATURES {@code protocol} and SET_FEATURES {@code features}. */
    static VhostUserSession negotiated(VirtioDevice device, long protocol, long features)
            throws VhostUserProtocolException {
        VhostUserSession s = new VhostUserSession(device, BackendOptions.defaults());
        s.handle(message(Request.SET_PROTOCOL_FEATURES, new U64(protocol).encode()));
        s.handle(message(Request.SET_FEATURES, new U64(features).encode()));
        return s;
    }

    /** Asserts that {@code s} refuses {@code m} naming the request, {@code field} and {@code value}. */
    static VhostUserProtocolException refused(VhostUserSession s, Message m, String field, long value) {
        VhostUserProtocolException e = assertThrows(VhostUserProtocolException.class, () -> s.handle(m));
        assertEquals(m.name(), e.request());
        assertEquals(field, e.field(), e.getMessage());
        assertEquals(value, e.value(), e.getMessage());
        return e;
    }
}
