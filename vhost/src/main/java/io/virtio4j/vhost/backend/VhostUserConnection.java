package io.virtio4j.vhost.backend;

import io.virtio4j.os.ControlMessageTruncatedException;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.vhost.events.FrontendConnected;
import io.virtio4j.vhost.events.FrontendDisconnected;
import io.virtio4j.vhost.events.RequestRejected;
import io.virtio4j.vhost.protocol.Header;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.logging.Logger;

/**
 * Serves one front-end over one connected socket: reads each message (12-byte header with its file
 * descriptors, then exactly {@code size} payload bytes), checks the framing, lets the {@link VhostUserSession}
 * handle it and sends the reply or REPLY_ACK.
 *
 * <p>Error policy. A message with bad framing (version bits, REPLY flag from the front-end, size too large for
 * its request, more descriptors than any message carries, descriptors in the middle of a message) cannot be
 * trusted to leave the stream in sync: the connection is closed with a log line naming the request. A
 * well-framed message that breaks the protocol (descriptors more or fewer than its request takes included) is
 * answered with a failure in the request's own terms: a request with a reply of its own gets that reply in its
 * error form where the format has one ({@link VhostUserSession#failureReply}), any other gets a failure REPLY_ACK
 * when the front-end asked for one (NEED_REPLY with REPLY_ACK negotiated); otherwise the front-end would go on
 * believing it succeeded, or wait for a reply, so the connection is closed. Either way the session releases every
 * mapping and descriptor, and the server goes on accepting.
 */
public final class VhostUserConnection {
    private static final Logger LOG = Logger.getLogger(VhostUserConnection.class.getName());

    private final UnixSocket socket;
    private final VhostUserSession session;
    private final String peer;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment header = arena.allocate(Header.SIZE, 8);
    private final MemorySegment payload = arena.allocate(Request.MAX_PAYLOAD, 8);
    private final MemorySegment reply = arena.allocate(Header.SIZE + Request.MAX_PAYLOAD, 8);
    private long messages;

    public VhostUserConnection(UnixSocket socket, VhostUserSession session, String peer) {
        this.socket = socket;
        this.session = session;
        this.peer = peer;
    }

    /** Why a connection ended. */
    public enum End { PEER_CLOSED, PROTOCOL_ERROR, IO_ERROR }

    /** Serves until the peer closes or breaks the protocol; always releases the session and the socket. */
    public End serve() {
        FrontendConnected.emit(peer);
        End end = null;
        try {
            end = served();
            return end;
        } finally {
            // after the session released the device: the rings' RingStopped events come first
            FrontendDisconnected.emit(peer, end == null ? "FAILED" : end.name(), messages);
        }
    }

    private End served() {
        try (arena; socket; session) {
            while (true) {
                Message m;
                try {
                    m = receive();
                } catch (VhostUserProtocolException e) {
                    LOG.warning(peer + ": closing connection: malformed message: " + e.getMessage());
                    RequestRejected.emit(peer, e, true);
                    return End.PROTOCOL_ERROR;
                }
                if (m == null) {
                    LOG.info(peer + ": front-end closed the connection after " + messages + " messages");
                    return End.PEER_CLOSED;
                }
                messages++;
                if (!dispatch(m)) {
                    return End.PROTOCOL_ERROR;
                }
            }
        } catch (LinuxException e) {
            LOG.warning(peer + ": closing connection: " + e.getMessage());
            return End.IO_ERROR;
        }
    }

    private boolean dispatch(Message m) {
        byte[] answer;
        try {
            answer = session.handle(m);
        } catch (VhostUserProtocolException e) {
            Request r = Request.of(m.request());
            if (r != null && r.hasReply()) {
                byte[] failed = VhostUserSession.failureReply(m);
                if (failed == null) {
                    LOG.warning(peer + ": closing connection: " + e.getMessage() + " (" + m.name()
                            + " has a reply with no error form)");
                    RequestRejected.emit(peer, e, true);
                    return false;
                }
                LOG.warning(peer + ": rejected " + e.getMessage());
                RequestRejected.emit(peer, e, false);
                sendReply(m.request(), failed);
                return true;
            }
            if (m.needReply() && session.replyAckNegotiated()) {
                LOG.warning(peer + ": rejected " + e.getMessage());
                RequestRejected.emit(peer, e, false);
                sendReply(m.request(), new U64(1).encode());
                return true;
            }
            LOG.warning(peer + ": closing connection: " + e.getMessage());
            RequestRejected.emit(peer, e, true);
            return false;
        } catch (RuntimeException e) {
            // A bug of ours must not take the whole back-end down: drop this front-end, keep serving others.
            LOG.severe(peer + ": closing connection: internal error handling " + m.name() + ": " + e);
            return false;
        }
        if (answer != null) {
            // a descriptor that goes with the answer (GET_INFLIGHT_FD's area) is the peer's once sent: ours closes
            try (FileDescriptor fd = session.takeReplyFd()) {
                if (fd == null) {
                    sendReply(m.request(), answer);
                } else {
                    sendReply(m.request(), answer, fd);
                }
            }
        } else if (m.needReply() && session.replyAckNegotiated()) {
            sendReply(m.request(), new U64(0).encode());
        }
        return true;
    }

    private void sendReply(int request, byte[] body, FileDescriptor... fds) {
        new Header(request, ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY, body.length).writeTo(reply);
        MemorySegment.copy(MemorySegment.ofArray(body), 0, reply, Header.SIZE, body.length);
        socket.sendmsg(reply, Header.SIZE + body.length, fds);
    }

    /**
     * The next message, or null when the front-end closed the connection between messages. The descriptors that
     * come with the header's first bytes are owned from the moment they arrive: every failure after that (the
     * rest of the header never coming, bad framing, an I/O error) closes them before it propagates.
     */
    private Message receive() throws VhostUserProtocolException {
        FileDescriptor[] fds = new FileDescriptor[Request.MAX_FDS];
        UnixSocket.Received got;
        try {
            got = socket.recvmsg(header, fds);
        } catch (ControlMessageTruncatedException e) {
            throw new VhostUserProtocolException("header", "fds", Request.MAX_FDS + 1L,
                    "more than " + Request.MAX_FDS + " descriptors: " + e.getMessage());
        }
        int nfds = got.fds();
        FileDescriptor[] received = Arrays.copyOf(fds, nfds);
        try {
            if (got.bytes() == 0) {
                closeAll(received); // a stream socket delivers descriptors only with data; closed all the same
                return null;
            }
            if (got.bytes() < Header.SIZE) {
                readFully(header, got.bytes(), Header.SIZE, "header");
            }
            Header h = Header.read(header);
            int request = h.request();
            int flags = h.flags();
            long size = h.size();
            String name = Request.nameOf(request);
            if ((flags & ProtocolFeatures.VERSION_MASK) != ProtocolFeatures.VERSION) {
                throw new VhostUserProtocolException(name, "flags", Integer.toUnsignedLong(flags), "version bits must be 1");
            }
            if ((flags & ProtocolFeatures.FLAG_REPLY) != 0) {
                throw new VhostUserProtocolException(name, "flags", Integer.toUnsignedLong(flags),
                        "REPLY is set on a request from the front-end");
            }
            Request r = Request.of(request);
            long max = r != null ? r.maxSize() : Request.MAX_PAYLOAD;
            if (size > max || (r != null && size < r.minSize())) {
                throw new VhostUserProtocolException(name, "size", size, r != null
                        ? "payload must be " + r.minSize() + ".." + r.maxSize() + " bytes for this request"
                        : "larger than any payload this back-end accepts");
            }
            readFully(payload, 0, size, name + " payload");
            return new Message(request, flags, payload.asSlice(0, size), received);
        } catch (VhostUserProtocolException | RuntimeException e) {
            closeAll(received);
            throw e;
        }
    }

    private static void closeAll(FileDescriptor[] fds) {
        for (FileDescriptor fd : fds) {
            fd.close();
        }
    }

    /** Reads into {@code buf[from, to)}; descriptors must not come with these bytes. */
    private void readFully(MemorySegment buf, long from, long to, String what) throws VhostUserProtocolException {
        FileDescriptor[] none = new FileDescriptor[0];
        long at = from;
        while (at < to) {
            UnixSocket.Received got;
            try {
                got = socket.recvmsg(buf.asSlice(at, to - at), none);
            } catch (ControlMessageTruncatedException e) {
                throw new VhostUserProtocolException(what, "fds", 1, "descriptors arrived in the middle of a message");
            }
            if (got.bytes() == 0) {
                throw new VhostUserProtocolException(what, "bytes", at, "connection closed in the middle of a message");
            }
            at += got.bytes();
        }
    }
}
