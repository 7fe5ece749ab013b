package io.virtio4j.vhost.frontend;

import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Poll;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.vhost.protocol.ConfigPayload;
import io.virtio4j.vhost.protocol.Header;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.LogDescription;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.MemoryTableDescription;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.SingleMemoryRegion;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import io.virtio4j.vhost.protocol.VringAddress;
import io.virtio4j.vhost.protocol.VringFd;
import io.virtio4j.vhost.protocol.VringState;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The front-end side of vhost-user (QEMU's role): negotiates with a back-end and hands it memory, rings and
 * eventfds. With REPLY_ACK negotiated every request without a reply asks for an acknowledgement, so a refusal
 * surfaces as {@link VhostUserRequestFailedException} at the call that caused it.
 *
 * <p>No reply is waited for longer than the {@link #replyPatience(Duration) reply patience}: a wedged back-end
 * surfaces as {@link BackendTimeoutException} instead of blocking its caller (a stop, a reconnect, a driver) for
 * ever. A reply may still arrive after that, so the connection is out of step: the requests below then refuse
 * with the same exception; close it ({@link FrontendSession#reconnect} does).
 */
public final class VhostUserFrontend implements AutoCloseable {
    /** How long a reply may take unless {@link #replyPatience(Duration)} says otherwise. */
    public static final Duration DEFAULT_REPLY_PATIENCE = Duration.ofSeconds(30);

    /** A region of the front-end's memory: guest-physical and front-end-virtual address, and its fd. */
    public record Region(long guestPhysAddr, long size, long userAddr, long mmapOffset, FileDescriptor fd) {
        MemoryRegionDescription description() {
            return new MemoryRegionDescription(guestPhysAddr, size, userAddr, mmapOffset);
        }
    }

    /** A reply as received: request code, flags and payload. */
    public record Reply(int request, int flags, byte[] payload) {
        /** The payload as a u64 (REPLY_ACK status, features, counts). */
        public long u64() {
            return decode(U64::decode).value();
        }

        /** The payload as {@code decoder} reads it; a malformed one fails the request. */
        <T> T decode(Decoder<T> decoder) {
            try {
                return decoder.decode("reply to " + Request.nameOf(request), MemorySegment.ofArray(payload));
            } catch (VhostUserProtocolException e) {
                throw new VhostUserRequestFailedException("malformed " + e.getMessage(), e);
            }
        }
    }

    /** A payload record's decode method. */
    @FunctionalInterface
    interface Decoder<T> {
        T decode(String request, MemorySegment payload) throws VhostUserProtocolException;
    }

    private final UnixSocket socket;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment buf = arena.allocate(Header.SIZE + 4096, 8);
    private final Poll readable;
    private Duration replyPatience = DEFAULT_REPLY_PATIENCE;
    private boolean replyAck;
    /** Why the connection is out of step (a reply waited for in vain), or null. */
    private String outOfStep;

    private VhostUserFrontend(UnixSocket socket) {
        this.socket = socket;
        this.readable = new Poll(socket.fileDescriptor(), Poll.POLLIN);
    }

    /** Sets how long any reply may take from now on (positive). */
    public void replyPatience(Duration patience) {
        replyPatience = requirePositive(patience);
    }

    static Duration requirePositive(Duration patience) {
        if (patience.isNegative() || patience.isZero()) {
            throw new IllegalArgumentException("patience " + patience + ": must be positive");
        }
        return patience;
    }

    public Duration replyPatience() {
        return replyPatience;
    }

    public static VhostUserFrontend connect(Path path) {
        return new VhostUserFrontend(UnixSocket.connect(path));
    }

    /**
     * Connects to the back-end at {@code path}, waiting up to {@code patience} for it to listen: a back-end
     * started just before (as QEMU and the peers' scripts start one) may not have created its socket yet
     * (ENOENT) or not be listening on it yet (ECONNREFUSED). Any other failure is not waited out.
     *
     * @throws LinuxException the last failure, once {@code patience} has run out or on any other error
     * @throws InterruptedException when interrupted while waiting
     */
    public static VhostUserFrontend connect(Path path, Duration patience) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        while (true) {
            try {
                return connect(path);
            } catch (LinuxException e) {
                if ((e.errno() != Errno.ENOENT && e.errno() != Errno.ECONNREFUSED) || System.nanoTime() - deadline > 0) {
                    throw e;
                }
            }
            Thread.sleep(2);
        }
    }

    public static VhostUserFrontend over(UnixSocket socket) {
        return new VhostUserFrontend(socket);
    }

    // ---- raw access: for tests that play a hostile front-end and for fuzzing (issue 12); not for a real front-end ----

    /**
     * Sends one message exactly as given, without any check of code, flags, payload or descriptors, and without
     * waiting for a reply: the caller reads one with {@link #receive()} if it expects one. For hostile-peer tests
     * and fuzzing; the request methods below are the front-end's API.
     */
    public void sendRaw(int request, int flags, byte[] payload, FileDescriptor... fds) {
        new Header(request, flags, payload.length).writeTo(buf);
        MemorySegment.copy(MemorySegment.ofArray(payload), 0, buf, Header.SIZE, payload.length);
        socket.sendmsg(buf, Header.SIZE + payload.length, fds);
    }

    /**
     * Sends only a 12-byte header announcing {@code size} payload bytes, and none of them: a truncated message, for
     * hostile-peer tests and fuzzing (the caller may send the rest, or close, or send anything else).
     */
    public void sendHeaderOnly(int request, int flags, int size) {
        new Header(request, flags, Integer.toUnsignedLong(size)).writeTo(buf);
        socket.sendmsg(buf, Header.SIZE);
    }

    /**
     * Receives one reply, or null when the back-end closed the connection.
     *
     * @throws BackendTimeoutException when none came within the {@link #replyPatience() reply patience}
     */
    public Reply receive() {
        return receive("a reply", NO_FDS);
    }

    /**
     * Receives one reply and the descriptors that come with its header into {@code fdsOut} (as many as it holds;
     * more is an error, and those are closed), or null when the back-end closed the connection. The caller owns
     * the descriptors received, also when this throws after receiving them.
     */
    private Reply receive(String awaited, FileDescriptor[] fdsOut) {
        long deadline = System.nanoTime() + replyPatience.toNanos();
        if (!readFully(0, Header.SIZE, deadline, awaited, fdsOut)) {
            return null;
        }
        Header h = Header.read(buf);
        if (h.size() > 4096) {
            throw new VhostUserRequestFailedException("reply to " + Request.nameOf(h.request()) + " announces " + h.size()
                    + " bytes");
        }
        if (!readFully(Header.SIZE, Header.SIZE + h.size(), deadline, awaited, NO_FDS)) {
            return null;
        }
        return new Reply(h.request(), h.flags(), buf.asSlice(Header.SIZE, h.size()).toArray(ValueLayout.JAVA_BYTE));
    }

    private static final FileDescriptor[] NO_FDS = new FileDescriptor[0];

    /** Reads {@code buf[from, to)}; descriptors may come only with the first bytes, into {@code fdsOut}. */
    private boolean readFully(long from, long to, long deadline, String awaited, FileDescriptor[] fdsOut) {
        long at = from;
        FileDescriptor[] room = fdsOut;
        while (at < to) {
            awaitReadable(deadline, awaited);
            UnixSocket.Received r = socket.recvmsg(buf.asSlice(at, to - at), room);
            if (r.bytes() == 0) {
                return false;
            }
            at += r.bytes();
            room = NO_FDS;
        }
        return true;
    }

    /**
     * Waits until the socket has bytes (or is closed or failed: recvmsg then tells), at most until {@code deadline}.
     * A signal cuts a poll short with 0, so it loops on its own deadline.
     */
    private void awaitReadable(long deadline, String awaited) {
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new BackendTimeoutException("no " + awaited + " from the back-end within " + replyPatience);
            }
            if (readable.await(left) != 0) {
                return;
            }
        }
    }

    /**
     * Waits up to {@code timeoutNanos} for the connection to end while no request is waiting for a reply: true when
     * the socket became readable, hung up or failed. Between requests a back-end has nothing to say on this socket
     * (its own requests travel on the back-end channel, which this front-end does not open), so anything there means
     * it closed the connection or died (kill -9 included: the kernel closes its end), or that it is out of step;
     * either way the connection is done. For a driver that watches its back-end from its control thread while other
     * threads drive the rings. Not while a request is under way.
     */
    public boolean awaitHangup(long timeoutNanos) {
        return outOfStep != null || readable.await(timeoutNanos) != 0;
    }

    // ---- requests ----

    /**
     * Sends request {@code r} and returns its reply when {@link Request#hasReply() it has one}; otherwise returns
     * null once the back-end acknowledged it (with REPLY_ACK negotiated, NEED_REPLY is set and a failure status
     * throws) or at once (without).
     */
    private Reply request(Request r, byte[] payload, FileDescriptor... fds) {
        return exchange(r, payload, NO_FDS, fds);
    }

    /** {@link #request(Request, byte[], FileDescriptor...)}, receiving the reply's descriptors into {@code replyFds}. */
    private Reply exchange(Request r, byte[] payload, FileDescriptor[] replyFds, FileDescriptor... fds) {
        if (outOfStep != null) {
            throw new BackendTimeoutException("the connection is out of step since: " + outOfStep + "; close it");
        }
        boolean ack = replyAck && !r.hasReply();
        sendRaw(r.code(), ack ? ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_NEED_REPLY : ProtocolFeatures.VERSION,
                payload, fds);
        if (r.hasReply()) {
            return expectReply(r, replyFds);
        }
        if (ack) {
            long status = expectReply(r).u64();
            if (status != 0) {
                throw new VhostUserRequestFailedException(r + " refused by the back-end (status " + status + ")");
            }
        }
        return null;
    }

    private Reply expectReply(Request r) {
        return expectReply(r, NO_FDS);
    }

    /** The reply to {@code r}, with the descriptors that came with it in {@code fdsOut} (the caller's, always). */
    private Reply expectReply(Request r, FileDescriptor[] fdsOut) {
        Reply reply;
        try {
            reply = receive("reply to " + r, fdsOut);
        } catch (BackendTimeoutException e) {
            // the reply may still come, and would be taken for the next request's
            outOfStep = e.getMessage();
            throw e;
        }
        if (reply == null) {
            throw new VhostUserRequestFailedException("back-end closed the connection instead of answering " + r);
        }
        if (reply.request() != r.code() || reply.flags() != (ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY)) {
            throw new VhostUserRequestFailedException("bad reply to " + r + ": request " + reply.request() + ", flags 0x"
                    + Integer.toHexString(reply.flags()));
        }
        return reply;
    }

    public long getFeatures() {
        return request(Request.GET_FEATURES, new byte[0]).u64();
    }

    public void setFeatures(long features) {
        request(Request.SET_FEATURES, new U64(features).encode());
    }

    public long getProtocolFeatures() {
        return request(Request.GET_PROTOCOL_FEATURES, new byte[0]).u64();
    }

    /** Sets protocol features; from then on, if REPLY_ACK is among them, every setter waits for its ack. */
    public void setProtocolFeatures(long features) {
        request(Request.SET_PROTOCOL_FEATURES, new U64(features).encode());
        replyAck = (features & ProtocolFeatures.bit(ProtocolFeatures.REPLY_ACK)) != 0;
    }

    public void setOwner() {
        request(Request.SET_OWNER, new byte[0]);
    }

    public long getQueueNum() {
        return request(Request.GET_QUEUE_NUM, new byte[0]).u64();
    }

    public void setMemTable(List<Region> regions) {
        MemoryTableDescription table = new MemoryTableDescription(regions.stream().map(Region::description).toList());
        request(Request.SET_MEM_TABLE, table.encode(), regions.stream().map(Region::fd).toArray(FileDescriptor[]::new));
    }

    public long getMaxMemSlots() {
        return request(Request.GET_MAX_MEM_SLOTS, new byte[0]).u64();
    }

    /** Adds one region to the back-end's table (CONFIGURE_MEM_SLOTS). */
    public void addMemReg(Region region) {
        request(Request.ADD_MEM_REG, new SingleMemoryRegion(region.description()).encode(), region.fd());
    }

    /** Removes the region of these addresses and size from the back-end's table; its fd does not go along. */
    public void remMemReg(Region region) {
        request(Request.REM_MEM_REG, new SingleMemoryRegion(region.description()).encode());
    }

    public void setVringNum(int index, int num) {
        request(Request.SET_VRING_NUM, new VringState(index, num).encode());
    }

    /** Where the ring resumes: a split ring's avail index, or a packed ring's positions and wrap counters. */
    public void setVringBase(int index, long base) {
        request(Request.SET_VRING_BASE, new VringState(index, base).encode());
    }

    /** Stops the ring; answers where it would resume (encoded as for {@link #setVringBase}). */
    public long getVringBase(int index) {
        VringState s = request(Request.GET_VRING_BASE, new VringState(index, 0).encode()).decode(VringState::decode);
        if (s.index() != index) {
            throw new VhostUserRequestFailedException("GET_VRING_BASE of ring " + index + " answered for ring " + s.index());
        }
        return s.num();
    }

    /** Ring addresses in the front-end's virtual address space. */
    public void setVringAddr(int index, long desc, long used, long avail) {
        request(Request.SET_VRING_ADDR, new VringAddress(index, 0, desc, used, avail, 0).encode());
    }

    /**
     * Ring addresses as {@link #setVringAddr(int, long, long, long)}, with the used ring logged at guest-physical
     * {@code logGuestAddr} in the dirty log when {@code log} (VHOST_VRING_F_LOG), or not. On a started ring only
     * the log flag and address may change.
     */
    public void setVringAddr(int index, long desc, long used, long avail, boolean log, long logGuestAddr) {
        request(Request.SET_VRING_ADDR, new VringAddress(index, log ? VringAddress.F_LOG : 0, desc, used, avail,
                log ? logGuestAddr : 0).encode());
    }

    /**
     * Hands the back-end the dirty log (SET_LOG_BASE, LOG_SHMFD): {@code size} bytes from {@code offset} of
     * {@code fd}, which stays the caller's. The back-end answers with a u64 (its value carries nothing).
     */
    public void setLogBase(FileDescriptor fd, long size, long offset) {
        request(Request.SET_LOG_BASE, new LogDescription(size, offset).encode(), fd);
    }

    /** SET_LOG_FD: the eventfd a back-end may signal after logging; stays the caller's. */
    public void setLogFd(EventFd fd) {
        request(Request.SET_LOG_FD, new byte[0], fd.fileDescriptor());
    }

    /** Kick eventfd, or null for NOFD (the back-end polls). */
    public void setVringKick(int index, EventFd kick) {
        vringFd(Request.SET_VRING_KICK, index, kick);
    }

    /** Call eventfd, or null for NOFD (the front-end polls). */
    public void setVringCall(int index, EventFd call) {
        vringFd(Request.SET_VRING_CALL, index, call);
    }

    /** Error eventfd the back-end signals when the ring fails, or null for NOFD (none). */
    public void setVringErr(int index, EventFd err) {
        vringFd(Request.SET_VRING_ERR, index, err);
    }

    private void vringFd(Request r, int index, EventFd fd) {
        byte[] payload = new VringFd(index, fd == null).encode();
        if (fd == null) {
            request(r, payload);
        } else {
            request(r, payload, fd.fileDescriptor());
        }
    }

    public void setVringEnable(int index, boolean enable) {
        request(Request.SET_VRING_ENABLE, new VringState(index, enable ? 1 : 0).encode());
    }

    public byte[] getConfig(int offset, int size) {
        ConfigPayload asked = new ConfigPayload(offset, ConfigPayload.FLAG_WRITABLE, new byte[size]);
        ConfigPayload answer = request(Request.GET_CONFIG, asked.encode()).decode(ConfigPayload::decode);
        if (answer.offset() != offset || answer.data().length != size) {
            // a back-end signals an error with an empty answer
            throw new VhostUserRequestFailedException("GET_CONFIG of " + size + " bytes at " + offset + " answered with "
                    + answer.data().length + " bytes at " + answer.offset());
        }
        return answer.data();
    }

    /** Writes {@code data} into the device's configuration space at {@code offset} (SET_CONFIG). */
    public void setConfig(int offset, byte[] data) {
        request(Request.SET_CONFIG, new ConfigPayload(offset, ConfigPayload.FLAG_WRITABLE, data).encode());
    }

    public void setStatus(long status) {
        request(Request.SET_STATUS, new U64(status).encode());
    }

    public long getStatus() {
        return request(Request.GET_STATUS, new byte[0]).u64();
    }

    public void resetDevice() {
        request(Request.RESET_DEVICE, new byte[0]);
    }

    /** A back-end's inflight area (GET_INFLIGHT_FD's answer): its size and offset in {@code fd}, which the caller owns. */
    public record InflightArea(InflightDescription description, FileDescriptor fd) implements AutoCloseable {
        @Override
        public void close() {
            fd.close();
        }
    }

    /**
     * Asks the back-end for an inflight area for {@code numQueues} queues of {@code queueSize} (GET_INFLIGHT_FD,
     * INFLIGHT_SHMFD): keep it for the life of the device and give it back with {@link #setInflightFd} on every
     * start, to this back-end and to any that replaces it.
     *
     * @return the area, or null when the back-end has none to give: it answered {@code mmap_size} 0
     *         ({@link InflightDescription#isNoArea}, its answer when it cannot allocate one) or sent no descriptor.
     *         QEMU then carries on without inflight tracking, and so may the caller.
     * @throws VhostUserRequestFailedException when the answer is an area for other queues than those asked for
     */
    public InflightArea getInflightFd(int numQueues, int queueSize) {
        byte[] asked = InflightDescription.request(numQueues, queueSize).encode();
        FileDescriptor[] fds = new FileDescriptor[1];
        try {
            InflightDescription d = exchange(Request.GET_INFLIGHT_FD, asked, fds).decode(InflightDescription::decode);
            if (d.isNoArea() || fds[0] == null) {
                return null; // a descriptor that came with a size of 0 is closed below
            }
            if (d.numQueues() != numQueues || d.queueSize() != queueSize) {
                throw new VhostUserRequestFailedException("GET_INFLIGHT_FD for " + numQueues + " queues of " + queueSize
                        + " answered " + d);
            }
            InflightArea area = new InflightArea(d, fds[0]);
            fds[0] = null;
            return area;
        } finally {
            if (fds[0] != null) {
                fds[0].close();
            }
        }
    }

    /** Gives the back-end the inflight area to record in (SET_INFLIGHT_FD); the area stays the caller's. */
    public void setInflightFd(InflightArea area) {
        request(Request.SET_INFLIGHT_FD, area.description().encode(), area.fd());
    }

    @Override
    public void close() {
        try (arena) {
            socket.close();
        }
    }
}
