package io.virtio4j.vhost.frontend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.protocol.Header;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.U64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Which requests wait for a reply and which ask for a REPLY_ACK comes from {@link Request#hasReply()}, the one
 * place that knows. The back-end's end of a socket pair has its answers queued before each request is made, so
 * nothing runs on another thread.
 */
@ExtendWith(NoFdLeaks.class)
class VhostUserFrontendRequestTest {
    private static final int REPLY = ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY;

    @Test
    void withReplyAckOnlyRequestsWithoutAReplyAskForAnAcknowledgement() {
        UnixSocket[] pair = UnixSocket.pair();
        try (VhostUserFrontend fe = VhostUserFrontend.over(pair[0]); UnixSocket backEnd = pair[1];
             Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Header.SIZE + 8, 8);
            fe.setProtocolFeatures(ProtocolFeatures.bit(ProtocolFeatures.REPLY_ACK)); // sent before REPLY_ACK holds
            answer(backEnd, buf, Request.GET_FEATURES, 0x1234);
            answer(backEnd, buf, Request.SET_FEATURES, 0); // the acknowledgement
            answer(backEnd, buf, Request.GET_VRING_BASE, 0); // index 0, base 0
            assertEquals(0x1234, fe.getFeatures());
            fe.setFeatures(0x1234);
            assertEquals(0, fe.getVringBase(0));

            assertSent(backEnd, buf, Request.SET_PROTOCOL_FEATURES, ProtocolFeatures.VERSION);
            assertSent(backEnd, buf, Request.GET_FEATURES, ProtocolFeatures.VERSION);
            assertSent(backEnd, buf, Request.SET_FEATURES, ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_NEED_REPLY);
            assertSent(backEnd, buf, Request.GET_VRING_BASE, ProtocolFeatures.VERSION);
        }
    }

    /**
     * GET_INFLIGHT_FD answered {@code mmap_size} 0 (a descriptor sent along is closed) or without a descriptor: no
     * area, as QEMU reads it, not a failure; an area for other queues than asked is one.
     */
    @Test
    void anInflightAnswerOfSizeZeroOrWithoutADescriptorIsNoArea() {
        UnixSocket[] pair = UnixSocket.pair();
        try (VhostUserFrontend fe = VhostUserFrontend.over(pair[0]); UnixSocket backEnd = pair[1];
             Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Header.SIZE + InflightDescription.SIZE, 8);
            try (FileDescriptor sent = Memfd.create("inflight", 4096)) {
                answer(backEnd, buf, InflightDescription.noArea(1, 64), sent);
            }
            assertNull(fe.getInflightFd(1, 64));
            answer(backEnd, buf, new InflightDescription(4096, 0, 1, 64));
            assertNull(fe.getInflightFd(1, 64));
            try (FileDescriptor sent = Memfd.create("inflight", 4096)) {
                answer(backEnd, buf, new InflightDescription(4096, 0, 2, 64), sent);
            }
            assertThrows(VhostUserRequestFailedException.class, () -> fe.getInflightFd(1, 64));
        }
    }

    /** Queues a GET_INFLIGHT_FD reply with {@code fds}. */
    private static void answer(UnixSocket backEnd, MemorySegment buf, InflightDescription d, FileDescriptor... fds) {
        new Header(Request.GET_INFLIGHT_FD.code(), REPLY, InflightDescription.SIZE).writeTo(buf);
        MemorySegment.copy(MemorySegment.ofArray(d.encode()), 0, buf, Header.SIZE, InflightDescription.SIZE);
        backEnd.sendmsg(buf, Header.SIZE + InflightDescription.SIZE, fds);
    }

    /** Queues an 8-byte reply to {@code r} (a u64, or a vring state of index 0 when {@code value} fits its num). */
    private static void answer(UnixSocket backEnd, MemorySegment buf, Request r, long value) {
        new Header(r.code(), REPLY, 8).writeTo(buf);
        MemorySegment.copy(MemorySegment.ofArray(new U64(value).encode()), 0, buf, Header.SIZE, 8);
        backEnd.sendmsg(buf, Header.SIZE + 8);
    }

    /** Reads the next request the front-end sent and checks its code and flags. */
    private static void assertSent(UnixSocket backEnd, MemorySegment buf, Request r, int flags) {
        readFully(backEnd, buf.asSlice(0, Header.SIZE));
        Header h = Header.read(buf);
        assertEquals(r.code(), h.request(), "request");
        assertEquals(flags, h.flags(), r + " flags");
        readFully(backEnd, buf.asSlice(0, h.size()));
    }

    private static void readFully(UnixSocket s, MemorySegment into) {
        long at = 0;
        while (at < into.byteSize()) {
            long got = s.recvmsg(into.asSlice(at), new FileDescriptor[0]).bytes();
            assertNotEquals(0, got, "the front-end closed its end");
            at += got;
        }
    }
}
