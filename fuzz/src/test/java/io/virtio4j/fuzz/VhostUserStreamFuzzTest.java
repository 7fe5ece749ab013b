package io.virtio4j.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.virtio4j.devices.blk.BlkDevice;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.testkit.OpenFds;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.VhostUserConnection;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.protocol.Header;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Fuzz target {@code vhost-stream} (c): a vhost-user message stream with file descriptors, from a hostile front-end,
 * into a back-end session ({@link VhostUserConnection} and {@link VhostUserSession}) serving a real device (a
 * {@link BlkDevice} over a null store: its queues start real workers). The input is a sequence of messages: a
 * request (known or any code), flags, a payload shaped for the request (memory tables and single regions with
 * memfds of chosen sizes, ring addresses inside or outside them, ring fds with or without NOFD, config and
 * inflight payloads, or raw bytes), a declared size that may lie, descriptors that may not belong, and sometimes
 * the header split in two with the descriptors on its first part.
 *
 * <p>The whole stream is written first and the front-end's write side shut, then the connection is served on this
 * thread to its end, so one input is one deterministic session. Invariants: the connection ends (peer closed or
 * protocol error, never an I/O error from our side), no internal error is ever logged (an exception that is not a
 * {@link io.virtio4j.vhost.protocol.VhostUserProtocolException} or another named error reaches the connection's
 * last-resort handler as SEVERE), every reply is well framed (VERSION and REPLY flags, size within the limit) and
 * answers, in order, a message that asks for one (a request with a reply, or NEED_REPLY); when the front-end
 * closed first, every request with a reply got exactly one; and once the connection and the device are closed,
 * every descriptor the session received is closed (testkit {@link OpenFds}).
 */
class VhostUserStreamFuzzTest {
    private static final int MAX_MESSAGES = 48;
    private static final long USER_BASE = 0x7f00_0000_0000L;
    private static final long REGION_STRIDE = 0x10_0000;
    private static final int[] KNOWN = knownCodes();
    private static final MethodHandle SHUTDOWN = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("shutdown").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final int SHUT_WR = 1;

    private static int[] knownCodes() {
        Request[] all = Request.values();
        int[] codes = new int[all.length];
        for (int i = 0; i < all.length; i++) {
            codes[i] = all[i].code();
        }
        return codes;
    }

    /** One message as sent, for matching replies. */
    private record Sent(int request, int flags) {
        boolean hasReply() {
            Request r = Request.of(request);
            return r != null && r.hasReply();
        }

        boolean mayBeAnswered() {
            return hasReply() || (flags & ProtocolFeatures.FLAG_NEED_REPLY) != 0;
        }
    }

    /** Collects SEVERE records of our loggers: an internal error, i.e. an exception nobody named. */
    private static final class Severe extends Handler {
        final List<String> records = new ArrayList<>();

        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= Level.SEVERE.intValue()) {
                synchronized (records) {
                    records.add(r.getLoggerName() + ": " + r.getMessage());
                }
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    @FuzzTest(maxDuration = "10s")
    void session(byte[] data) throws Throwable {
        Logger ours = Logger.getLogger("io.virtio4j");
        Severe severe = new Severe();
        boolean parents = ours.getUseParentHandlers();
        Level level = ours.getLevel();
        ours.setUseParentHandlers(false); // thousands of sessions a second: no console output
        ours.setLevel(Level.WARNING);
        ours.addHandler(severe);
        Map<Integer, String> before = OpenFds.snapshot();
        try {
            long t0 = System.nanoTime();
            run(new FuzzInput(data), severe);
            if (TRACE) {
                System.out.println("  session took " + (System.nanoTime() - t0) / 1000 + " us");
            }
        } finally {
            ours.removeHandler(severe);
            ours.setUseParentHandlers(parents);
            ours.setLevel(level);
        }
        OpenFds.assertBackTo(before);
    }

    private static final boolean TRACE = System.getenv("VIRTIO4J_FUZZ_TRACE") != null;

    private static void run(FuzzInput in, Severe severe) throws Throwable {
        List<Sent> sent = new ArrayList<>();
        VhostUserConnection.End end;
        List<int[]> replies = new ArrayList<>(); // {request, flags, size, first payload word}
        UnixSocket[] pair = UnixSocket.pair();
        try (Arena arena = Arena.ofConfined(); UnixSocket front = pair[0];
             BlockStore store = BlockStore.ofNull(1 << 20, false, 512)) {
            BlkDevice device = new BlkDevice(store, BlkDevice.Options.of(2, BlockEngine.SYNC, 4));
            try {
                MemorySegment buf = arena.allocate(Header.SIZE + 1024, 8);
                boolean broken = false;
                for (int i = 0; i < MAX_MESSAGES && in.hasMore() && !broken; i++) {
                    broken = !sendOne(in, front, buf, sent);
                }
                int rc = (int) SHUTDOWN.invokeExact(front.fileDescriptor().fd(), SHUT_WR);
                assertEquals(0, rc, "shutdown(SHUT_WR) of the front-end's socket");
                end = new VhostUserConnection(pair[1], new VhostUserSession(device, BackendOptions.defaults()),
                        "fuzz").serve();
                readReplies(front, arena, replies);
            } finally {
                device.close();
            }
        }
        synchronized (severe.records) {
            if (!severe.records.isEmpty()) {
                fail("internal error: " + severe.records);
            }
        }
        if (TRACE) {
            System.out.println("  sent " + sent + "; replies " + replies.stream().map(r -> Request.nameOf(r[0]) + "/" + r[2]).toList() + "; end " + end);
        }
        assertTrue(end != VhostUserConnection.End.IO_ERROR, "the session ended on an I/O error");
        checkReplies(sent, replies, end);
    }

    /** Sends one message built from the input; false when the socket refused it (nothing more can go). */
    private static boolean sendOne(FuzzInput in, UnixSocket front, MemorySegment buf, List<Sent> sent) {
        int pick = in.u8();
        int request = pick < 240 ? KNOWN[pick % KNOWN.length] : in.u32();
        int fl = in.u8();
        int flags = fl < 224 ? ProtocolFeatures.VERSION | (fl & 1) * ProtocolFeatures.FLAG_NEED_REPLY : fl;
        List<FileDescriptor> fds = new ArrayList<>();
        try {
            byte[] payload = payload(in, request, fds);
            int sz = in.u8();
            long size = sz < 232 ? payload.length : sz < 248 ? payload.length + (sz & 7) - 4 : in.u32() & 0xFFFF_FFFFL;
            int extraFds = in.u8() < 240 ? 0 : 1 + in.below(3);
            for (int i = 0; i < extraFds; i++) {
                fds.add(EventFd.create(EventFd.EFD_NONBLOCK).fileDescriptor());
            }
            MemorySegment.copy(headerBytes(request, flags, size), 0, buf, ValueLayout.JAVA_BYTE, 0, Header.SIZE);
            MemorySegment.copy(payload, 0, buf, ValueLayout.JAVA_BYTE, Header.SIZE, payload.length);
            FileDescriptor[] f = fds.toArray(new FileDescriptor[0]);
            int split = in.u8() < 240 ? 0 : 1 + in.below(Header.SIZE - 1);
            if (split > 0) {
                // the header's first bytes with the descriptors, the rest later: a short read with fds
                front.sendmsg(buf, split, f);
                front.sendmsg(buf.asSlice(split), Header.SIZE - split + payload.length);
            } else {
                front.sendmsg(buf, Header.SIZE + payload.length, f);
            }
            sent.add(new Sent(request, flags));
            return true;
        } catch (LinuxException e) {
            return false;
        } finally {
            for (FileDescriptor fd : fds) {
                fd.close(); // the back-end has its own copies now
            }
        }
    }

    private static byte[] headerBytes(int request, int flags, long size) {
        ByteBuffer b = ByteBuffer.allocate(Header.SIZE).order(ByteOrder.nativeOrder());
        b.putInt(request).putInt(flags).putInt((int) size);
        return b.array();
    }

    /** A payload shaped for {@code request} (mostly), with the descriptors it carries added to {@code fds}. */
    private static byte[] payload(FuzzInput in, int request, List<FileDescriptor> fds) {
        ByteBuffer b = ByteBuffer.allocate(1024).order(ByteOrder.nativeOrder());
        if (in.u8() >= 240) {
            b.put(in.bytes(in.u8()));
            return done(b);
        }
        Request r = Request.of(request);
        if (r == null) {
            b.put(in.bytes(in.below(64)));
            return done(b);
        }
        switch (r) {
            case SET_FEATURES, SET_PROTOCOL_FEATURES, SET_STATUS, VRING_KICK, SET_LOG_BASE, SEND_RARP, NET_SET_MTU,
                 SET_VRING_ENDIAN -> {
                b.putLong(features(in));
                if (r == Request.SET_LOG_BASE) {
                    b.putLong(in.u64());
                    fds.add(memfd(in));
                }
            }
            case SET_MEM_TABLE -> {
                int n = in.below(4);
                b.putInt(n).putInt(0);
                for (int i = 0; i < n; i++) {
                    long size = region(in, b, i);
                    fds.add(memfdOf(size, in));
                }
            }
            case ADD_MEM_REG, REM_MEM_REG -> {
                b.putLong(0);
                long size = region(in, b, in.below(4));
                if (in.u8() < 224) {
                    fds.add(memfdOf(size, in));
                }
            }
            case SET_VRING_NUM, SET_VRING_BASE, GET_VRING_BASE, SET_VRING_ENABLE -> {
                b.putInt(in.below(4));
                int pick = in.u8();
                b.putInt(pick < 200 ? 1 << (pick % 16) : pick < 240 ? pick : in.u32());
            }
            case SET_VRING_ADDR -> {
                b.putInt(in.below(4)).putInt(in.u8() < 240 ? 0 : in.u32());
                for (int i = 0; i < 3; i++) {
                    b.putLong(ringAddress(in));
                }
                b.putLong(in.u8() < 240 ? 0 : in.u64());
            }
            case SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ERR -> {
                int idx = in.below(4);
                boolean nofd = in.u8() >= 224;
                b.putLong(idx | (nofd ? 0x100L : 0));
                if (!nofd) {
                    fds.add(EventFd.create(EventFd.EFD_NONBLOCK).fileDescriptor());
                }
            }
            case GET_CONFIG, SET_CONFIG -> {
                int size = in.below(70);
                b.putInt(in.below(70)).putInt(in.u8() < 240 ? size : in.u32()).putInt(in.u8() < 240 ? 0 : in.u32());
                b.put(in.bytes(size));
                for (int i = b.position(); i < 12 + size; i++) {
                    b.put((byte) 0);
                }
            }
            case GET_INFLIGHT_FD, SET_INFLIGHT_FD -> {
                long mmapSize = in.u8() < 200 ? 4096L * in.below(8) : in.u64();
                b.putLong(mmapSize).putLong(in.u8() < 240 ? 0 : in.u64());
                b.putShort((short) in.below(4)).putShort((short) (in.u8() < 200 ? 1 << in.below(11) : in.u16()));
                b.putInt(0);
                if (r == Request.SET_INFLIGHT_FD) {
                    fds.add(memfdOf(Math.min(mmapSize, 1 << 16), in));
                }
            }
            case SET_LOG_FD, SET_BACKEND_REQ_FD -> fds.add(EventFd.create(EventFd.EFD_NONBLOCK).fileDescriptor());
            case IOTLB_MSG -> b.put(in.bytes(32));
            default -> {
                // no payload
            }
        }
        return done(b);
    }

    private static byte[] done(ByteBuffer b) {
        byte[] out = new byte[b.position()];
        b.flip().get(out);
        return out;
    }

    private static long features(FuzzInput in) {
        int pick = in.u8();
        return switch (pick % 4) {
            case 0 -> ProtocolFeatures.SESSION;
            case 1 -> ProtocolFeatures.SESSION | ProtocolFeatures.bit(ProtocolFeatures.CONFIG)
                    | ProtocolFeatures.bit(ProtocolFeatures.INFLIGHT_SHMFD);
            case 2 -> (1L << 32) | (1L << 30) | (1L << 29) | (1L << 28); // VERSION_1, PROTOCOL_FEATURES, EVENT_IDX, INDIRECT
            default -> in.u64();
        };
    }

    /** A region description (guest, size, user address, mmap offset) of region slot {@code i}; returns its size. */
    private static long region(FuzzInput in, ByteBuffer b, int i) {
        int pick = in.u8();
        long size = pick < 200 ? 4096L * (1 + pick % 16) : pick < 240 ? pick : in.u64();
        long guest = in.u8() < 224 ? i * REGION_STRIDE : in.u64();
        long user = in.u8() < 224 ? USER_BASE + i * REGION_STRIDE : in.u64();
        long offset = in.u8() < 224 ? 0 : in.u8() < 128 ? 4096L * in.below(4) : in.u64();
        b.putLong(guest).putLong(size).putLong(user).putLong(offset);
        return size;
    }

    /** A ring address: mostly inside one of the regions a memory table may describe, sometimes anything. */
    private static long ringAddress(FuzzInput in) {
        int pick = in.u8();
        if (pick < 224) {
            return USER_BASE + (pick % 4) * REGION_STRIDE + 64L * in.below(256);
        }
        return in.u64();
    }

    /** A memfd of about {@code size} bytes (capped; sometimes shorter than described, which the back-end must catch). */
    private static FileDescriptor memfdOf(long size, FuzzInput in) {
        long real = Math.max(0, Math.min(size, 1 << 16));
        if (in.u8() >= 240) {
            real = real / 2;
        }
        return Memfd.create("fuzz-region", real);
    }

    private static FileDescriptor memfd(FuzzInput in) {
        return Memfd.create("fuzz-log", 4096L * in.below(4));
    }

    private static void readReplies(UnixSocket front, Arena arena, List<int[]> replies) {
        MemorySegment h = arena.allocate(Header.SIZE, 8);
        MemorySegment body = arena.allocate(Request.MAX_PAYLOAD + 16, 8);
        // A reply may carry one descriptor: GET_INFLIGHT_FD's area (no other reply does). Room for more, so that a
        // back-end sending more is caught by the count below rather than truncated away.
        FileDescriptor[] fds = new FileDescriptor[UnixSocket.MAX_FDS];
        while (true) {
            int[] fdCount = new int[1];
            if (!readFully(front, h, Header.SIZE, fds, fdCount)) {
                return;
            }
            int request = h.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
            int flags = h.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
            int size = h.get(ValueLayout.JAVA_INT_UNALIGNED, 8);
            assertTrue(size >= 0 && size <= Request.MAX_PAYLOAD, "reply to " + request + " of " + size + " bytes");
            assertTrue(size == 0 || readFully(front, body, size, fds, fdCount), "reply to " + request + " cut short");
            assertTrue(fdCount[0] <= (request == Request.GET_INFLIGHT_FD.code() ? 1 : 0),
                    fdCount[0] + " descriptors came with the reply to " + request);
            long word = size >= 8 ? body.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) : -1;
            replies.add(new int[]{request, flags, size, (int) word});
        }
    }

    /**
     * Reads exactly {@code n} bytes; false at end of stream before the first. Descriptors that come along are counted
     * into {@code fdCount[0]} and closed at once (the harness only checks that they came where they may).
     */
    private static boolean readFully(UnixSocket s, MemorySegment into, long n, FileDescriptor[] fds, int[] fdCount) {
        long at = 0;
        while (at < n) {
            long got;
            try {
                UnixSocket.Received r = s.recvmsg(into.asSlice(at, n - at), fds);
                for (int i = 0; i < r.fds(); i++) {
                    fds[i].close();
                    fds[i] = null;
                }
                fdCount[0] += r.fds();
                got = r.bytes();
            } catch (LinuxException e) {
                // The back-end closed with our later messages unread: Linux reports ECONNRESET once the replies
                // queued before it are read, i.e. the end of the stream.
                assertEquals("ECONNRESET", e.errnoName(), "reading replies: " + e.getMessage());
                got = 0;
            }
            if (got == 0) {
                assertEquals(0, at, "a reply cut short by the end of the stream");
                return false;
            }
            at += got;
        }
        return true;
    }

    private static void checkReplies(List<Sent> sent, List<int[]> replies, VhostUserConnection.End end) {
        int s = 0;
        for (int[] r : replies) {
            assertEquals(ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY, r[1], "flags of a reply to " + r[0]);
            // the next message that may be answered, skipping those that asked for nothing
            while (s < sent.size() && !(sent.get(s).mayBeAnswered() && sent.get(s).request() == r[0])) {
                assertTrue(!sent.get(s).hasReply() || end != VhostUserConnection.End.PEER_CLOSED,
                        "request " + Request.nameOf(sent.get(s).request()) + " (message " + s + ") got no reply");
                s++;
            }
            assertTrue(s < sent.size(), "a reply to " + Request.nameOf(r[0]) + " that answers no message");
            s++;
        }
        if (end == VhostUserConnection.End.PEER_CLOSED) {
            for (; s < sent.size(); s++) {
                assertTrue(!sent.get(s).hasReply(), "request " + Request.nameOf(sent.get(s).request())
                        + " (message " + s + ") got no reply");
            }
        }
    }
}
