package io.virtio4j.vhost.backend;

import io.virtio4j.testkit.OpenFds;

import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.frontend.VhostUserFrontend.Reply;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.SingleMemoryRegion;
import io.virtio4j.vhost.protocol.VringFd;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.ThrowingConsumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A hostile front-end against the back-end's framing and protocol checks, one case per test. Each case asserts
 * the specific outcome the back-end's error policy promises:
 * <ul>
 * <li>bad framing (version bits, REPLY flag, a size the request cannot have, descriptors where none or fewer
 *     belong): the connection is closed, whatever was negotiated;</li>
 * <li>a well-framed message that breaks the protocol: a failure REPLY_ACK (u64 != 0) when REPLY_ACK is
 *     negotiated and NEED_REPLY set, after which the same connection keeps working; otherwise the connection is
 *     closed.</li>
 * </ul>
 * Then a new connection to the same server must still get the right GET_FEATURES answer, and no descriptor may
 * be left open in this JVM (front-end and back-end both live here) besides the server's listening socket.
 */
class HostileFrontendTest {
    private static final Duration WATCHDOG = Duration.ofSeconds(30);
    private static final long BIT30 = bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
    private static final long OFFERED = FakeDevice.FEATURES | BIT30;
    private static final long PACKED = io.virtio4j.core.feature.VirtioFeatures.bit(io.virtio4j.core.feature.VirtioFeatures.RING_PACKED);
    private static final int V = ProtocolFeatures.VERSION;
    private static final int NEED = ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_NEED_REPLY;
    private static final long PROTOCOL = bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.CONFIG)
            | bit(ProtocolFeatures.STATUS) | bit(ProtocolFeatures.CONFIGURE_MEM_SLOTS) | bit(ProtocolFeatures.RESET_DEVICE);
    private static final long USER = 0x7000_0000_0000L;
    private static final int MEM = 64 * 1024;

    private Map<Integer, String> fdsBefore;
    private TestServer server;

    @BeforeEach
    void startServer() {
        fdsBefore = OpenFds.snapshot();
        server = new TestServer(2); // one queue pair's worth of rings
        assertTimeoutPreemptively(WATCHDOG, this::assertNewConnectionAnswers);
        OpenFds.assertBackTo(fdsBefore, 1); // the listening socket
    }

    @AfterEach
    void stopServer() {
        try {
            server.close();
        } finally {
            OpenFds.assertBackTo(fdsBefore);
        }
    }

    // ---- the frame of every case ----

    /**
     * Negotiates (with or without REPLY_ACK), runs {@code attack}, closes the connection, checks a new one is
     * answered and that every descriptor opened meanwhile (here or in the back-end) is closed again.
     */
    private void attack(boolean replyAck, ThrowingConsumer<VhostUserFrontend> attack) {
        attack(replyAck, OFFERED & ~PACKED, attack);
    }

    /** The same, with these virtio {@code features} negotiated (split rings unless they hold RING_PACKED). */
    private void attack(boolean replyAck, long features, ThrowingConsumer<VhostUserFrontend> attack) {
        Map<Integer, String> fds = OpenFds.snapshot(); // the listening socket, and the test's own memfds and eventfds
        assertTimeoutPreemptively(WATCHDOG, () -> {
            try (VhostUserFrontend fe = negotiated(replyAck, features)) {
                attack.accept(fe);
            }
            server.assertServing();
            assertNewConnectionAnswers();
        });
        OpenFds.assertBackTo(fds);
    }

    private VhostUserFrontend negotiated(boolean replyAck, long features) {
        VhostUserFrontend fe = server.connect();
        try {
            assertEquals(OFFERED, fe.getFeatures());
            fe.setFeatures(features);
            assertEquals(ProtocolFeatures.SESSION | FakeDevice.PROTOCOL_FEATURES, fe.getProtocolFeatures());
            fe.setProtocolFeatures(PROTOCOL | (replyAck ? bit(ProtocolFeatures.REPLY_ACK) : 0));
            fe.setOwner();
            return fe;
        } catch (RuntimeException | Error e) {
            fe.close();
            throw e;
        }
    }

    private void assertNewConnectionAnswers() {
        try (VhostUserFrontend fe = server.connect()) {
            assertEquals(OFFERED, fe.getFeatures(), "GET_FEATURES on a new connection");
        }
    }

    /** The back-end closed the connection: end of stream, or a reset when it left our bytes unread. */
    /** One raw request ({@code code}, {@code flags}, {@code payload}, {@code fds}) that must make the back-end close. */
    private void closedBy(boolean replyAck, int code, int flags, byte[] payload, FileDescriptor... fds) {
        attack(replyAck, fe -> {
            fe.sendRaw(code, flags, payload, fds);
            expectClosed(fe);
        });
    }

    /** One request with NEED_REPLY, on a REPLY_ACK connection, that must get a failure reply (and no close). */
    private void failureAckFor(Request request, byte[] payload, FileDescriptor... fds) {
        attack(true, fe -> {
            fe.sendRaw(request.code(), NEED, payload, fds);
            expectFailureAck(fe, request.code());
        });
    }

    private static void expectClosed(VhostUserFrontend fe) {
        Reply r;
        try {
            r = fe.receive();
        } catch (LinuxException e) {
            assertEquals(Errno.ECONNRESET, e.errno(), "receive after the back-end's close: " + e.getMessage());
            return;
        }
        if (r != null) {
            throw new AssertionError("expected the back-end to close the connection, got a reply to "
                    + Request.nameOf(r.request()) + " with flags 0x" + Integer.toHexString(r.flags()) + " and "
                    + r.payload().length + " bytes");
        }
    }

    /** A failure REPLY_ACK for {@code request}; then the same connection must still answer correctly. */
    private static void expectFailureAck(VhostUserFrontend fe, int request) {
        Reply r = fe.receive();
        assertNotNull(r, "the back-end closed the connection instead of answering with a failure REPLY_ACK");
        assertEquals(request, r.request(), "reply's request code");
        assertEquals(ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY, r.flags(), "reply flags");
        assertEquals(8, r.payload().length, "REPLY_ACK payload size");
        assertNotEquals(0, r.u64(), "REPLY_ACK status must report the failure");
        assertEquals(OFFERED, fe.getFeatures(), "the connection goes on after a refused request");
    }

    private static void expectSuccessAck(VhostUserFrontend fe, int request) {
        Reply r = fe.receive();
        assertNotNull(r, "the back-end closed the connection instead of acknowledging");
        assertEquals(request, r.request());
        assertEquals(ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY, r.flags());
        assertEquals(0, r.u64(), "REPLY_ACK status of a valid request");
    }

    /**
     * What {@code source} logs while open: by default the connection's lines about refused requests, to check which
     * field a refusal names.
     */
    private static final class Rejections implements AutoCloseable {
        private final Logger logger;
        final List<String> lines = new CopyOnWriteArrayList<>();
        private final Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                lines.add(r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };

        Rejections() {
            this(VhostUserConnection.class);
        }

        Rejections(Class<?> source) {
            logger = Logger.getLogger(source.getName());
            logger.addHandler(handler);
        }

        /** A refusal of {@code request} naming {@code field} was logged (before its failure reply was sent). */
        void assertNamed(String request, String field) {
            String named = ": rejected " + request + ": " + field + "=";
            assertTrue(lines.stream().anyMatch(l -> l.contains(named)), "no refusal naming " + request + " " + field + " in " + lines);
        }

        @Override
        public void close() {
            logger.removeHandler(handler);
        }
    }

    // ---- payloads ----

    private static ByteBuffer buf(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.nativeOrder());
    }

    private static byte[] u64(long v) {
        return buf(8).putLong(v).array();
    }

    private static byte[] state(int index, int num) {
        return buf(8).putInt(index).putInt(num).array();
    }

    /** A memory table header announcing {@code nregions}, followed by {@code regions} (gpa, size, uaddr, offset each). */
    private static byte[] memTable(int nregions, long[]... regions) {
        ByteBuffer b = buf(8 + 32 * regions.length).putInt(nregions).putInt(0);
        for (long[] r : regions) {
            b.putLong(r[0]).putLong(r[1]).putLong(r[2]).putLong(r[3]);
        }
        return b.array();
    }

    private static long[] region(long gpa, long size, long uaddr, long offset) {
        return new long[] {gpa, size, uaddr, offset};
    }

    private static byte[] vringAddr(int index, long desc, long used, long avail) {
        return buf(40).putInt(index).putInt(0).putLong(desc).putLong(used).putLong(avail).putLong(0).array();
    }

    private static EventFd eventFd() {
        return EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
    }

    // ---- bad framing: the connection is closed ----

    @ParameterizedTest(name = "flags 0x{0}")
    @ValueSource(ints = {0x0, 0x2, 0x3, 0x8})
    void badVersionBitsCloseTheConnection(int flags) {
        closedBy(false, Request.SET_FEATURES.code(), flags, u64(OFFERED));
    }

    @Test
    void replyFlagFromTheFrontEndClosesTheConnection() {
        closedBy(false, Request.GET_FEATURES.code(), V | ProtocolFeatures.FLAG_REPLY, new byte[0]);
    }

    @Test
    void setFeaturesWithSixteenBytesClosesTheConnection() {
        closedBy(false, Request.SET_FEATURES.code(), V, new byte[16]);
    }

    @Test
    void getFeaturesLargerThanAnyPayloadClosesTheConnection() {
        closedBy(false, Request.GET_FEATURES.code(), V, new byte[300]);
    }

    @Test
    void memTableLongerThanEightRegionsClosesTheConnection() {
        attack(false, fe -> {
            long[][] nine = new long[9][];
            for (int i = 0; i < 9; i++) {
                nine[i] = region((long) i * MEM, MEM, USER + (long) i * MEM, 0);
            }
            fe.sendRaw(Request.SET_MEM_TABLE.code(), V, memTable(9, nine));
            expectClosed(fe);
        });
    }

    @Test
    void twoEventFdsWithSetVringKickCloseTheConnection() {
        try (EventFd a = eventFd(); EventFd b = eventFd()) {
            closedBy(false, Request.SET_VRING_KICK.code(), V, u64(0), a.fileDescriptor(), b.fileDescriptor());
        }
    }

    @Test
    void anFdWithSetFeaturesClosesTheConnection() {
        try (EventFd a = eventFd()) {
            closedBy(false, Request.SET_FEATURES.code(), V, u64(OFFERED), a.fileDescriptor());
        }
    }

    @Test
    void anFdWithGetFeaturesClosesTheConnection() {
        try (EventFd a = eventFd()) {
            closedBy(false, Request.GET_FEATURES.code(), V, new byte[0], a.fileDescriptor());
        }
    }

    /** Bad framing is never answered, even when the front-end asks for an acknowledgement. */
    @Test
    void badFramingClosesEvenWithReplyAckAndNeedReply() {
        closedBy(true, Request.SET_FEATURES.code(), NEED, new byte[16]);
    }

    /**
     * Descriptors travel beside the bytes, so a message with more than its request takes leaves the stream in step:
     * with REPLY_ACK it gets a failure naming {@code fds}, the descriptors are closed, the connection goes on.
     */
    @Test
    void descriptorsWhereNoneBelongGetAFailureReplyWithReplyAck() {
        try (EventFd a = eventFd(); EventFd b = eventFd(); Rejections rejections = new Rejections()) {
            attack(true, fe -> {
                fe.sendRaw(Request.SET_FEATURES.code(), NEED, u64(OFFERED), a.fileDescriptor());
                expectFailureAck(fe, Request.SET_FEATURES.code());
                rejections.assertNamed("SET_FEATURES", "fds");
                fe.sendRaw(Request.SET_VRING_KICK.code(), NEED, u64(0), a.fileDescriptor(), b.fileDescriptor());
                expectFailureAck(fe, Request.SET_VRING_KICK.code());
                rejections.assertNamed("SET_VRING_KICK", "fds");
            });
        }
    }

    /**
     * ADD_MEM_REG takes exactly one descriptor: without one (it used to throw ArrayIndexOutOfBounds and drop the
     * connection unanswered) or with two, a failure naming {@code fds}, and the connection keeps serving (a region
     * sent properly afterwards is added).
     */
    @ParameterizedTest(name = "descriptors: {0}")
    @ValueSource(ints = {0, 2})
    void addMemRegWithoutItsDescriptorOrWithTwoGetsAFailureReply(int descriptors) {
        try (FileDescriptor a = Memfd.create("hostile", MEM); FileDescriptor b = Memfd.create("hostile", MEM);
             Rejections rejections = new Rejections()) {
            attack(true, fe -> {
                byte[] region = new SingleMemoryRegion(new MemoryRegionDescription(0, MEM, USER, 0)).encode();
                FileDescriptor[] fds = descriptors == 0 ? new FileDescriptor[0] : new FileDescriptor[] {a, b};
                fe.sendRaw(Request.ADD_MEM_REG.code(), NEED, region, fds);
                expectFailureAck(fe, Request.ADD_MEM_REG.code());
                rejections.assertNamed("ADD_MEM_REG", "fds");
                fe.addMemReg(new VhostUserFrontend.Region(0, MEM, USER, 0, a));
            });
        }
    }

    /** Descriptors must come with a message's first byte; here they ride on the payload. */
    @Test
    void anFdArrivingWithThePayloadClosesTheConnection() {
        try (EventFd a = eventFd()) {
            Map<Integer, String> fds = OpenFds.snapshot();
            assertTimeoutPreemptively(WATCHDOG, () -> {
                UnixSocket raw = UnixSocket.connect(server.path());
                try (Arena arena = Arena.ofConfined(); VhostUserFrontend fe = VhostUserFrontend.over(raw)) {
                    MemorySegment m = arena.allocate(12 + 8, 8);
                    m.set(ValueLayout.JAVA_INT, 0, Request.SET_VRING_CALL.code());
                    m.set(ValueLayout.JAVA_INT, 4, V);
                    m.set(ValueLayout.JAVA_INT, 8, 8);
                    m.set(ValueLayout.JAVA_LONG_UNALIGNED, 12, 0);
                    raw.sendmsg(m, 12);
                    raw.sendmsg(m.asSlice(12), 8, a.fileDescriptor());
                    expectClosed(fe);
                }
                assertNewConnectionAnswers();
            });
            OpenFds.assertBackTo(fds);
        }
    }

    @Test
    void aHeaderAnnouncingEightBytesThenThePeerClosing() {
        attack(false, fe -> fe.sendHeaderOnly(Request.SET_FEATURES.code(), V, 8));
    }

    @Test
    void aHalfHeaderThenThePeerClosing() {
        Map<Integer, String> fds = OpenFds.snapshot();
        try (UnixSocket s = UnixSocket.connect(server.path()); Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(12, 8);
            m.set(ValueLayout.JAVA_INT, 0, Request.GET_FEATURES.code());
            s.sendmsg(m, 6);
        }
        assertTimeoutPreemptively(WATCHDOG, this::assertNewConnectionAnswers);
        OpenFds.assertBackTo(fds);
    }

    /**
     * Descriptors that arrive with the first bytes of a header belong to the back-end from that moment: when the
     * rest of the header never comes (the peer closes) or comes with more descriptors, they are closed too.
     */
    @ParameterizedTest(name = "rest of the header with another fd: {0}")
    @ValueSource(booleans = {false, true})
    void aPartialHeaderWithDescriptorsThenThePeerClosing(boolean restWithAnFd) {
        try (EventFd a = eventFd(); FileDescriptor mem = Memfd.create("hostile", MEM); EventFd b = eventFd()) {
            Map<Integer, String> fds = OpenFds.snapshot();
            assertTimeoutPreemptively(WATCHDOG, () -> {
                try (UnixSocket s = UnixSocket.connect(server.path()); Arena arena = Arena.ofConfined()) {
                    MemorySegment m = arena.allocate(12 + 8, 8);
                    m.set(ValueLayout.JAVA_INT, 0, Request.SET_VRING_KICK.code());
                    m.set(ValueLayout.JAVA_INT, 4, V);
                    m.set(ValueLayout.JAVA_INT, 8, 8);
                    s.sendmsg(m, 6, a.fileDescriptor(), mem);
                    if (restWithAnFd) {
                        s.sendmsg(m.asSlice(6), 6, b.fileDescriptor());
                    }
                }
                assertNewConnectionAnswers();
                server.assertServing();
            });
            OpenFds.assertBackTo(fds);
        }
    }

    /** How a message whose header came with descriptors goes wrong after them. */
    enum ReadFailure {
        /** the rest of the header has bad version bits */
        BAD_VERSION,
        /** the header announces more payload than the request can have */
        SIZE_TOO_LARGE,
        /** the header is whole, then the peer closes before the payload */
        PAYLOAD_NEVER_COMES,
        /** the payload comes with descriptors of its own */
        DESCRIPTORS_WITH_THE_PAYLOAD
    }

    /**
     * A header that arrives short with descriptors (a memfd among them: one leaked would pin guest memory) and then
     * fails on the read path in any other way: the connection is closed and so is every descriptor that came, the
     * server goes on serving.
     */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(ReadFailure.class)
    void aShortHeaderWithDescriptorsThatThenFailsClosesThem(ReadFailure failure) {
        try (EventFd a = eventFd(); FileDescriptor mem = Memfd.create("hostile", MEM); EventFd b = eventFd()) {
            Map<Integer, String> fds = OpenFds.snapshot();
            assertTimeoutPreemptively(WATCHDOG, () -> {
                try (UnixSocket s = UnixSocket.connect(server.path()); Arena arena = Arena.ofConfined();
                     VhostUserFrontend fe = VhostUserFrontend.over(s)) {
                    MemorySegment m = arena.allocate(12 + 40, 8);
                    m.set(ValueLayout.JAVA_INT, 0, Request.SET_MEM_TABLE.code());
                    m.set(ValueLayout.JAVA_INT, 4, failure == ReadFailure.BAD_VERSION ? 0x2 : V);
                    m.set(ValueLayout.JAVA_INT, 8, failure == ReadFailure.SIZE_TOO_LARGE ? 1000 : 40);
                    s.sendmsg(m, 5, a.fileDescriptor(), mem); // part of the header, with the descriptors
                    s.sendmsg(m.asSlice(5), 7); // the rest of the header
                    switch (failure) {
                        case PAYLOAD_NEVER_COMES -> {
                            s.sendmsg(m.asSlice(12), 20); // half the payload, then the close below
                            return;
                        }
                        case DESCRIPTORS_WITH_THE_PAYLOAD -> s.sendmsg(m.asSlice(12), 40, b.fileDescriptor());
                        default -> {
                        }
                    }
                    expectClosed(fe);
                }
            });
            assertTimeoutPreemptively(WATCHDOG, () -> {
                assertNewConnectionAnswers();
                server.assertServing();
            });
            OpenFds.assertBackTo(fds);
        }
    }

    // ---- protocol errors with REPLY_ACK: a failure reply, the connection goes on ----

    @Test
    void unknownRequestGetsAFailureReply() {
        attack(true, fe -> {
            fe.sendRaw(99, NEED, new byte[0]);
            expectFailureAck(fe, 99);
        });
    }

    @Test
    void unknownRequestWithAnFdGetsAFailureReplyAndTheFdIsClosed() {
        try (EventFd a = eventFd()) {
            attack(true, fe -> {
                fe.sendRaw(99, NEED, u64(0), a.fileDescriptor());
                expectFailureAck(fe, 99);
            });
        }
    }

    @Test
    void ringIndexBeyondTheQueuesGetsAFailureReply() {
        failureAckFor(Request.SET_VRING_NUM, state(7, 256));
    }

    @ParameterizedTest(name = "queue size {0}")
    @ValueSource(ints = {0, 3, 65536})
    void badQueueSizeGetsAFailureReply(int size) {
        attack(true, fe -> {
            fe.sendRaw(Request.SET_VRING_NUM.code(), NEED, state(0, size));
            expectFailureAck(fe, Request.SET_VRING_NUM.code());
            fe.sendRaw(Request.SET_VRING_NUM.code(), NEED, state(0, 256));
            expectSuccessAck(fe, Request.SET_VRING_NUM.code());
        });
    }

    @Test
    void memTableWithNoRegionsGetsAFailureReply() {
        failureAckFor(Request.SET_MEM_TABLE, memTable(0));
    }

    @Test
    void memTableAnnouncingNineRegionsGetsAFailureReply() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM)) {
            failureAckFor(Request.SET_MEM_TABLE, memTable(9, region(0, MEM, USER, 0)), mem);
        }
    }

    @Test
    void memTableWhoseSizeDoesNotMatchItsRegionsGetsAFailureReply() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM)) {
            failureAckFor(Request.SET_MEM_TABLE, memTable(2, region(0, MEM, USER, 0)), mem, mem);
        }
    }

    @Test
    void memTableWithFewerFdsThanRegionsGetsAFailureReply() {
        try (FileDescriptor mem = Memfd.create("hostile", 2 * MEM)) {
            attack(true, fe -> {
                fe.sendRaw(Request.SET_MEM_TABLE.code(), NEED,
                        memTable(2, region(0, MEM, USER, 0), region(MEM, MEM, USER + MEM, MEM)), mem);
                expectFailureAck(fe, Request.SET_MEM_TABLE.code());
            });
        }
    }

    @Test
    void memTableWithOverlappingGuestAddressesGetsAFailureReply() {
        try (FileDescriptor mem = Memfd.create("hostile", 2 * MEM)) {
            attack(true, fe -> {
                fe.sendRaw(Request.SET_MEM_TABLE.code(), NEED,
                        memTable(2, region(0, MEM, USER, 0), region(MEM / 2, MEM, USER + 4 * MEM, MEM)), mem, mem);
                expectFailureAck(fe, Request.SET_MEM_TABLE.code());
            });
        }
    }

    @Test
    void memTableWithOverlappingUserAddressesGetsAFailureReply() {
        try (FileDescriptor mem = Memfd.create("hostile", 2 * MEM)) {
            attack(true, fe -> {
                fe.sendRaw(Request.SET_MEM_TABLE.code(), NEED,
                        memTable(2, region(0, MEM, USER, 0), region(4 * MEM, MEM, USER + MEM / 2, MEM)), mem, mem);
                expectFailureAck(fe, Request.SET_MEM_TABLE.code());
            });
        }
    }

    @Test
    void memTableWithAZeroSizedRegionGetsAFailureReply() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM)) {
            failureAckFor(Request.SET_MEM_TABLE, memTable(1, region(0, 0, USER, 0)), mem);
        }
    }

    @Test
    void memTableWrappingTheAddressSpaceGetsAFailureReply() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM)) {
            failureAckFor(Request.SET_MEM_TABLE, memTable(1, region(-4096, MEM, USER, 0)), mem);
        }
    }

    /**
     * Two regions that both end exactly at 2^64 overlap (in guest or in user addresses) although the exclusive end
     * of each wraps to 0: the second is refused, the first would have been accepted alone.
     */
    @ParameterizedTest(name = "overlapping in user addresses: {0}")
    @ValueSource(booleans = {false, true})
    void memTableWithRegionsOverlappingAtTheTopOfTheAddressSpaceGetsAFailureReply(boolean user) {
        String address = user ? "userspace_addr" : "guest_phys_addr";
        try (FileDescriptor mem = Memfd.create("hostile", 2 * MEM); Rejections rejections = new Rejections()) {
            attack(true, fe -> {
                long[] first = user ? region(0, MEM, -MEM, 0) : region(-MEM, MEM, USER, 0);
                long[] second = user ? region(4 * MEM, MEM, -MEM, MEM) : region(-MEM, MEM, USER + 4 * MEM, MEM);
                fe.sendRaw(Request.SET_MEM_TABLE.code(), NEED, memTable(2, first, second), mem, mem);
                expectFailureAck(fe, Request.SET_MEM_TABLE.code());
                rejections.assertNamed("SET_MEM_TABLE", "regions[1]." + address);
                fe.sendRaw(Request.SET_MEM_TABLE.code(), NEED, memTable(1, first), mem);
                expectSuccessAck(fe, Request.SET_MEM_TABLE.code());
                fe.sendRaw(Request.ADD_MEM_REG.code(), NEED, new SingleMemoryRegion(
                        new MemoryRegionDescription(second[0], second[1], second[2], second[3])).encode(), mem);
                expectFailureAck(fe, Request.ADD_MEM_REG.code());
                rejections.assertNamed("ADD_MEM_REG", "region." + address);
            });
        }
    }

    /**
     * A region reaching past the end of its memfd must be refused before anything is mapped: touching a page
     * beyond the end of the file would raise SIGBUS and kill this JVM. A valid table is accepted afterwards.
     */
    @ParameterizedTest(name = "mmap_offset {0}")
    @ValueSource(longs = {0, 4096, 100, MEM})
    void memTableBeyondTheEndOfTheMemfdGetsAFailureReply(long mmapOffset) {
        try (FileDescriptor mem = Memfd.create("hostile", MEM)) {
            attack(true, fe -> {
                long size = mmapOffset == 0 ? 2L * MEM : MEM - mmapOffset + 4096;
                fe.sendRaw(Request.SET_MEM_TABLE.code(), NEED, memTable(1, region(0, size, USER, mmapOffset)), mem);
                expectFailureAck(fe, Request.SET_MEM_TABLE.code());
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM - 4096, USER, 4096, mem)));
            });
        }
    }

    /** Ring addresses outside every region: nothing is started, the request that would start the ring fails. */
    @Test
    void ringOutsideEveryRegionFailsWhenEnabled() {
        ringOutsideEveryRegion(true);
    }

    @Test
    void ringOutsideEveryRegionFailsOnTheKick() {
        ringOutsideEveryRegion(false);
    }

    private void ringOutsideEveryRegion(boolean kickFirst) {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, 256);
                fe.setVringCall(0, call);
                // desc would be inside, but the avail and used rings lie beyond the region's end
                fe.sendRaw(Request.SET_VRING_ADDR.code(), NEED, vringAddr(0, USER, USER + MEM + 8192, USER + MEM));
                expectSuccessAck(fe, Request.SET_VRING_ADDR.code());
                if (kickFirst) {
                    fe.setVringKick(0, kick);
                    fe.sendRaw(Request.SET_VRING_ENABLE.code(), NEED, state(0, 1));
                    expectFailureAck(fe, Request.SET_VRING_ENABLE.code());
                } else {
                    fe.setVringEnable(0, true);
                    fe.sendRaw(Request.SET_VRING_KICK.code(), NEED, u64(0), kick.fileDescriptor());
                    expectFailureAck(fe, Request.SET_VRING_KICK.code());
                }
                assertFalse(server.device.calls.contains("start 0"), "ring 0 was started: " + server.device.calls);
                // the front-end may correct the addresses (gpa != user address: the user address counts)
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringKick(0, kick);
                assertTrue(server.device.calls.contains("start 0"), "ring 0 not started: " + server.device.calls);
            });
        }
    }

    /** The positive control of the ring cases: ring areas given by user address, a GPA elsewhere. */
    @Test
    void ringInsideTheRegionStarts() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0x1_0000_0000L, MEM, USER, 0, mem)));
                fe.setVringNum(1, 256);
                fe.setVringAddr(1, USER, USER + 8192, USER + 4096);
                fe.setVringCall(1, call);
                fe.setVringKick(1, kick);
                fe.setVringEnable(1, true);
                assertEquals(List.of("start 1"), server.device.calls.stream().filter(c -> c.startsWith("start")).toList());
                assertEquals(0, fe.getVringBase(1), "GET_VRING_BASE of an untouched ring");
                assertTrue(server.device.calls.contains("stop 1"));
            });
        }
    }

    /** Positive control of the config and status payloads, encoded by the front-end and decoded here, and back. */
    @Test
    void configAndStatusTravelBothWays() {
        attack(true, fe -> {
            assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, fe.getConfig(0, 8));
            assertArrayEquals(new byte[] {7, 8, 0, 0}, fe.getConfig(6, 4), "config space beyond the device's reads as zero");
            fe.setStatus(0xF);
            assertEquals(0xF, fe.getStatus());
        });
    }

    // ---- status (PROTOCOL_F_STATUS) ----

    private static final long FEATURES_OK = 0x8;

    /**
     * FEATURES_OK is kept only for features the back-end accepted: before any SET_FEATURES (a fresh connection
     * negotiated nothing yet) or after a refused one, a status write with it leaves it clear, and GET_STATUS shows
     * the refusal, as the driver reads it back; after an accepted SET_FEATURES it is kept, until a reset (status 0)
     * that no SET_FEATURES followed.
     */
    @Test
    void featuresOkIsKeptOnlyForAcceptedFeatures() {
        assertTimeoutPreemptively(WATCHDOG, () -> {
            try (VhostUserFrontend fe = server.connect()) {
                fe.getFeatures();
                fe.setProtocolFeatures(PROTOCOL | bit(ProtocolFeatures.REPLY_ACK));
                fe.setStatus(0x3 | FEATURES_OK);
                assertEquals(0x3, fe.getStatus(), "FEATURES_OK before any SET_FEATURES");
                long notOffered = OFFERED | (1L << 40);
                fe.sendRaw(Request.SET_FEATURES.code(), NEED, u64(notOffered));
                expectFailureAck(fe, Request.SET_FEATURES.code());
                fe.setStatus(0x3 | FEATURES_OK);
                assertEquals(0x3, fe.getStatus(), "FEATURES_OK after a refused SET_FEATURES");
                fe.setFeatures(OFFERED & ~PACKED);
                fe.setStatus(0x3 | FEATURES_OK);
                assertEquals(0x3 | FEATURES_OK, fe.getStatus(), "FEATURES_OK for accepted features");
                fe.sendRaw(Request.SET_FEATURES.code(), NEED, u64(notOffered));
                expectFailureAck(fe, Request.SET_FEATURES.code());
                fe.setStatus(0x3 | FEATURES_OK);
                assertEquals(0x3, fe.getStatus(), "the last SET_FEATURES was refused");
                fe.setFeatures(OFFERED & ~PACKED);
                fe.setStatus(0);
                fe.setStatus(0x3 | FEATURES_OK);
                assertEquals(0x3, fe.getStatus(), "FEATURES_OK after a reset without a new SET_FEATURES");
                fe.setFeatures(OFFERED & ~PACKED);
                fe.setStatus(0x3 | FEATURES_OK);
                assertEquals(0x3 | FEATURES_OK, fe.getStatus(), "FEATURES_OK for features accepted after the reset");
            }
        });
    }

    @Test
    void aStatusBeyondOneByteIsRefused() {
        failureAckFor(Request.SET_STATUS, u64(0x10F));
    }

    /**
     * A status write of 0 resets the device: the started ring stops and the device's queues are reset, and nothing
     * restarts the ring (not even a memory table change) until the front-end gives it a kick again; GET_VRING_BASE
     * after it still answers where the ring stopped (older QEMU sends it after the 0), and the setup the front-end
     * gave stays.
     */
    @Test
    void statusZeroStopsTheRingsAndResetsTheDevice() {
        try (FileDescriptor mem = Memfd.create("hostile", 2 * MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, 256);
                fe.setVringBase(0, 7);
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringCall(0, call);
                fe.setVringEnable(0, true);
                fe.setVringKick(0, kick);
                fe.setStatus(0xF);
                assertEquals(List.of("start 0"), server.device.calls.stream().filter(c -> !c.equals("reset")).toList());
                server.device.calls.clear();

                fe.setStatus(0);
                assertEquals(List.of("stop 0", "reset"), server.device.calls);
                assertEquals(0, fe.getStatus());
                fe.addMemReg(new VhostUserFrontend.Region(MEM, MEM, USER + MEM, MEM, mem));
                assertEquals(List.of("stop 0", "reset"), server.device.calls, "a reset ring started again");
                assertEquals(7, fe.getVringBase(0), "where the ring stopped");

                fe.setVringCall(0, call);
                fe.setVringKick(0, kick);
                assertEquals(List.of("stop 0", "reset", "start 0"), server.device.calls, "the ring set up again");
            });
        }
    }

    // ---- failures of requests that have a reply of their own ----

    /**
     * GET_CONFIG that fails (a size that disagrees with its payload) is answered in GET_CONFIG's format: its error
     * form, an empty payload, never a REPLY_ACK (QEMU checks the size); the connection goes on.
     */
    @ParameterizedTest(name = "NEED_REPLY: {0}")
    @ValueSource(booleans = {false, true})
    void aFailedGetConfigIsAnsweredWithAnEmptyPayload(boolean needReply) {
        try (Rejections rejections = new Rejections()) {
            attack(true, fe -> {
                byte[] bad = buf(12 + 4).putInt(0).putInt(8).putInt(0).putInt(0).array(); // says 8 bytes, has 4
                fe.sendRaw(Request.GET_CONFIG.code(), needReply ? NEED : V, bad);
                Reply r = fe.receive();
                assertNotNull(r, "the back-end closed the connection instead of answering GET_CONFIG");
                assertEquals(Request.GET_CONFIG.code(), r.request());
                assertEquals(ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY, r.flags());
                assertEquals(0, r.payload().length, "GET_CONFIG's error answer is an empty payload");
                rejections.assertNamed("GET_CONFIG", "size");
                assertArrayEquals(new byte[] {1, 2, 3, 4}, fe.getConfig(0, 4), "the connection goes on");
            });
        }
    }

    /**
     * GET_INFLIGHT_FD that fails (here: INFLIGHT_SHMFD is not offered by this device) is answered in its own format:
     * mmap_size 0 and no descriptor, which QEMU reads as "no inflight region", num_queues and queue_size as asked;
     * the connection goes on.
     */
    @Test
    void aFailedGetInflightFdIsAnsweredWithNoRegion() {
        attack(true, fe -> {
            byte[] asked = buf(24).putLong(0).putLong(0).putShort((short) 2).putShort((short) 256).putInt(0).array();
            fe.sendRaw(Request.GET_INFLIGHT_FD.code(), V, asked);
            Reply r = fe.receive();
            assertNotNull(r, "the back-end closed the connection instead of answering GET_INFLIGHT_FD");
            assertEquals(Request.GET_INFLIGHT_FD.code(), r.request());
            assertEquals(ProtocolFeatures.VERSION | ProtocolFeatures.FLAG_REPLY, r.flags());
            ByteBuffer b = ByteBuffer.wrap(r.payload()).order(ByteOrder.nativeOrder());
            assertEquals(24, r.payload().length);
            assertEquals(0, b.getLong(0), "mmap_size");
            assertEquals(0, b.getLong(8), "mmap_offset");
            assertEquals(2, b.getShort(16), "num_queues");
            assertEquals(256, b.getShort(18), "queue_size");
            assertEquals(OFFERED, fe.getFeatures(), "the connection goes on");
        });
    }

    /**
     * A request whose reply is a bare value (GET_VRING_BASE's base, GET_STATUS's status) has no error form: a
     * failure closes the connection, also with NEED_REPLY, where a u64 REPLY_ACK of 1 would have been read as a
     * base or a status.
     */
    @Test
    void aFailedRequestWhoseReplyHasNoErrorFormClosesTheConnection() {
        closedBy(true, Request.GET_VRING_BASE.code(), NEED, state(7, 0));
        try (EventFd a = eventFd()) {
            closedBy(true, Request.GET_STATUS.code(), NEED, new byte[0], a.fileDescriptor());
        }
    }

    // ---- one front-end at a time ----

    /**
     * A second front-end on the socket while one is served is refused at once (its connection closed, with a log
     * line naming it), not left waiting unanswered in the accept backlog; the first keeps working, and once it has
     * gone a new one is served.
     */
    @Test
    void aSecondFrontEndIsRefusedWhileTheFirstIsServed() {
        Map<Integer, String> fds;
        try (Rejections log = new Rejections(VhostUserBackendEndpoint.class)) {
            fds = OpenFds.snapshot();
            List<String> lines = log.lines;
            assertTimeoutPreemptively(WATCHDOG, () -> {
                try (VhostUserFrontend first = server.connect()) {
                    assertEquals(OFFERED, first.getFeatures());
                    try (VhostUserFrontend second = VhostUserFrontend.over(UnixSocket.connect(server.path()))) {
                        expectClosed(second);
                    }
                    assertTrue(lines.stream().anyMatch(l -> l.contains(server.path() + " #") && l.contains("refused")),
                            "no log line naming the refused connection: " + lines);
                    assertEquals(OFFERED, first.getFeatures(), "the first front-end is still served");
                    first.setProtocolFeatures(PROTOCOL);
                    assertEquals(0x0, first.getStatus());
                }
                assertNewConnectionAnswers();
            });
        }
        OpenFds.assertBackTo(fds);
    }

    /**
     * Memory slots: removing the region that holds a started ring is refused and changes nothing; removing
     * another is fine, and so is removing the ring's region once GET_VRING_BASE stopped it.
     */
    @Test
    void removingTheRegionOfAStartedRingGetsAFailureReply() {
        try (FileDescriptor a = Memfd.create("hostile", MEM); FileDescriptor b = Memfd.create("hostile", MEM);
             EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, fe -> {
                assertEquals(BackendOptions.defaults().maxMemSlots(), fe.getMaxMemSlots());
                VhostUserFrontend.Region ra = new VhostUserFrontend.Region(0, MEM, USER, 0, a);
                VhostUserFrontend.Region rb = new VhostUserFrontend.Region(MEM, MEM, USER + MEM, 0, b);
                fe.addMemReg(ra);
                fe.setVringNum(0, 256);
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringCall(0, call);
                fe.setVringKick(0, kick);
                fe.setVringEnable(0, true);
                fe.addMemReg(rb);
                List<String> calls = List.copyOf(server.device.calls);
                assertEquals(List.of("start 0", "stop 0", "start 0"), calls.stream().filter(c -> !c.equals("reset")).toList(),
                        "the ring restarts over the grown table");
                fe.sendRaw(Request.REM_MEM_REG.code(), NEED,
                        new SingleMemoryRegion(new MemoryRegionDescription(0, MEM, USER, 0)).encode());
                expectFailureAck(fe, Request.REM_MEM_REG.code());
                assertEquals(calls, server.device.calls, "a refused removal leaves the ring alone");
                fe.remMemReg(rb);
                assertEquals(0, fe.getVringBase(0));
                fe.remMemReg(ra);
            });
        }
    }

    @Test
    void addingARegionOverlappingTheTableGetsAFailureReplyAndItsFdIsClosed() {
        try (FileDescriptor a = Memfd.create("hostile", MEM); FileDescriptor b = Memfd.create("hostile", MEM)) {
            attack(true, fe -> {
                fe.addMemReg(new VhostUserFrontend.Region(0, MEM, USER, 0, a));
                fe.sendRaw(Request.ADD_MEM_REG.code(), NEED,
                        new SingleMemoryRegion(new MemoryRegionDescription(MEM / 2, MEM, USER + 4 * MEM, 0)).encode(), b);
                expectFailureAck(fe, Request.ADD_MEM_REG.code());
                fe.addMemReg(new VhostUserFrontend.Region(MEM, MEM, USER + MEM, 0, b));
            });
        }
    }

    // ---- packed rings (VIRTIO_F_RING_PACKED negotiated) ----

    /** A packed ring's size need not be a power of two, but it still has bounds; a split ring's must be one. */
    @Test
    void packedQueueSizesAreCheckedAgainstTheirOwnRule() {
        attack(true, OFFERED, fe -> {
            fe.sendRaw(Request.SET_VRING_NUM.code(), NEED, state(0, 250));
            expectSuccessAck(fe, Request.SET_VRING_NUM.code());
            for (int bad : new int[] {0, 32769}) {
                fe.sendRaw(Request.SET_VRING_NUM.code(), NEED, state(0, bad));
                expectFailureAck(fe, Request.SET_VRING_NUM.code());
            }
        });
        failureAckFor(Request.SET_VRING_NUM, state(0, 250));
    }

    /**
     * A packed ring's event suppression areas (in SET_VRING_ADDR's avail and used fields) outside every region: the
     * ring does not start and the request that would start it fails; corrected, it starts.
     */
    @ParameterizedTest(name = "device area outside: {0}")
    @ValueSource(booleans = {false, true})
    void packedEventAreaOutsideEveryRegionFails(boolean deviceArea) {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, OFFERED, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, 250);
                fe.setVringCall(0, call);
                fe.setVringKick(0, kick);
                long outside = USER + MEM;
                fe.sendRaw(Request.SET_VRING_ADDR.code(), NEED, vringAddr(0, USER,
                        deviceArea ? outside : USER + 8192, deviceArea ? USER + 4096 : outside));
                expectSuccessAck(fe, Request.SET_VRING_ADDR.code());
                fe.sendRaw(Request.SET_VRING_ENABLE.code(), NEED, state(0, 1));
                expectFailureAck(fe, Request.SET_VRING_ENABLE.code());
                assertFalse(server.device.calls.contains("start 0"), "ring 0 was started: " + server.device.calls);
                // a 4-byte area straddling the region's end is outside too
                fe.setVringAddr(0, USER, deviceArea ? USER + MEM - 2 : USER + 8192, deviceArea ? USER + 4096 : USER + MEM - 2);
                fe.sendRaw(Request.SET_VRING_ENABLE.code(), NEED, state(0, 1));
                expectFailureAck(fe, Request.SET_VRING_ENABLE.code());
                assertFalse(server.device.calls.contains("start 0"), "ring 0 was started: " + server.device.calls);
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringKick(0, kick);
                assertTrue(server.device.calls.contains("start 0"), "ring 0 not started: " + server.device.calls);
            });
        }
    }

    /** A packed ring's base carries both positions and wrap counters, and comes back as it went in. */
    @Test
    void packedBaseComesBackWithItsWrapCounters() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, OFFERED, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, 250);
                // next avail 5 in lap 0, next used 3 in lap 0: two buffers were in flight when the ring stopped
                long base = 5 | (3L << 16);
                fe.setVringBase(0, base);
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringCall(0, call);
                fe.setVringKick(0, kick);
                fe.setVringEnable(0, true);
                assertTrue(server.device.calls.contains("start 0"), "ring 0 not started: " + server.device.calls);
                assertEquals(base, fe.getVringBase(0));
            });
        }
    }

    /**
     * DPDK's virtio-user sends only the avail half of a packed base (0x8000 for a fresh ring): the used half is taken
     * equal to it, as DPDK's back-end does, and the base comes back whole.
     */
    @Test
    void packedBaseWithOnlyItsAvailHalfResumesWithNothingInFlight() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, OFFERED, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, 250);
                fe.setVringBase(0, 0x8000);
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringCall(0, call);
                fe.setVringKick(0, kick);
                fe.setVringEnable(0, true);
                assertTrue(server.device.calls.contains("start 0"), "ring 0 not started: " + server.device.calls);
                assertEquals(0x8000_8000L, fe.getVringBase(0));
            });
        }
    }

    /** A packed base whose position lies beyond the ring, or that has more in flight than the ring holds, is refused. */
    @ParameterizedTest(name = "base 0x{0}")
    @ValueSource(longs = {0x8000_80FAL, 0x80FA_8000L, 0x8000_0005L})
    void packedBaseThatDoesNotFitTheRingIsRefused(long base) {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, OFFERED, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, 250);
                fe.setVringBase(0, base);
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringCall(0, call);
                fe.setVringKick(0, kick);
                fe.sendRaw(Request.SET_VRING_ENABLE.code(), NEED, state(0, 1));
                expectFailureAck(fe, Request.SET_VRING_ENABLE.code());
                assertFalse(server.device.calls.contains("start 0"), "ring 0 was started: " + server.device.calls);
            });
        }
    }

    /**
     * A size or base set under one format, then the format changed by SET_FEATURES while the ring was stopped: the
     * ring does not start, the request that would start it fails, naming the field.
     */
    @ParameterizedTest(name = "size {0}, base 0x{1}")
    @org.junit.jupiter.params.provider.CsvSource({"250, 0", "256, 2147516416"})
    void aSizeOrBaseThatTheRenegotiatedFormatRefusesKeepsTheRingStopped(int size, long base) {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd();
             Rejections rejections = new Rejections()) {
            attack(true, OFFERED, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, size);
                fe.setVringBase(0, base);
                fe.setFeatures(OFFERED & ~PACKED); // split from now on
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringCall(0, call);
                fe.setVringKick(0, kick);
                fe.sendRaw(Request.SET_VRING_ENABLE.code(), NEED, state(0, 1));
                expectFailureAck(fe, Request.SET_VRING_ENABLE.code());
                assertFalse(server.device.calls.contains("start 0"), "ring 0 was started: " + server.device.calls);
                rejections.assertNamed("SET_VRING_ENABLE", size == 250 ? "vring[0].num" : "vring[0].base");
            });
        }
    }

    /** A split ring's base is a 16-bit index: a larger value is refused. */
    @Test
    void splitBaseBeyondSixteenBitsIsRefused() {
        failureAckFor(Request.SET_VRING_BASE, state(0, 0x1_0000));
    }

    /** Ring 0 over {@code mem}, started with {@code kick}. */
    private static void startRing0(VhostUserFrontend fe, FileDescriptor mem, EventFd kick, EventFd call) {
        fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
        fe.setVringNum(0, 256);
        fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
        fe.setVringCall(0, call);
        fe.setVringEnable(0, true);
        fe.setVringKick(0, kick);
    }

    /** A new kick whose ring then cannot be stopped (a device bug): the kick that came with it is closed all the same. */
    @Test
    void aNewKickIsClosedWhenStoppingTheRingFails() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd();
             EventFd next = eventFd()) {
            attack(true, fe -> {
                startRing0(fe, mem, kick, call);
                assertTrue(server.device.calls.contains("start 0"), "ring 0 not started: " + server.device.calls);
                server.device.failStops = true;
                fe.sendRaw(Request.SET_VRING_KICK.code(), NEED, u64(0), next.fileDescriptor());
                expectClosed(fe); // an internal error: the connection goes, the server keeps serving
                server.device.failStops = false;
            });
        }
    }

    /**
     * Two started rings, and ring 0 cannot be stopped (a device bug, or a worker that did not answer): when the
     * connection goes, ring 1 is stopped all the same (a ring left running would be drained by nobody before the
     * device resets and the memory is unmapped). The rings are stopped in index order, so without the care ring 1
     * is never reached and the wait below runs into the watchdog.
     */
    @Test
    void closingStopsEveryRingThoughOneFailsToStop() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd();
             EventFd kick1 = eventFd(); EventFd call1 = eventFd(); EventFd next = eventFd()) {
            attack(true, fe -> {
                startRing0(fe, mem, kick, call);
                long ring1 = USER + 0x4000;
                fe.setVringNum(1, 256);
                fe.setVringAddr(1, ring1, ring1 + 8192, ring1 + 4096);
                fe.setVringCall(1, call1);
                fe.setVringEnable(1, true);
                fe.setVringKick(1, kick1);
                assertTrue(server.device.calls.contains("start 1"), "ring 1 not started: " + server.device.calls);
                server.device.failStops = true;
                fe.sendRaw(Request.SET_VRING_KICK.code(), NEED, u64(0), next.fileDescriptor());
                expectClosed(fe); // stopping ring 0 for the new kick failed: the connection goes
                while (!server.device.calls.contains("stop 1")) { // the session's close, on the server's thread
                    Thread.onSpinWait();
                }
                server.device.failStops = false;
            });
        }
    }

    /**
     * The guest memory of a connection that ended is unmapped through the device (VirtioDevice.retire), which holds
     * it back while a queue thread of its may still touch it: mapped after the close, gone once released. So are
     * the rings' call and error eventfd numbers closed (a thread that may touch the memory may also signal them,
     * and a closed number may be handed on): kept open, on a sink eventfd, until then.
     */
    @Test
    void theMemoryOfAClosedConnectionIsUnmappedOnlyWhenTheDeviceLetsIt() {
        String name = "hostile-retire-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        try (FileDescriptor mem = Memfd.create(name, MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            Map<Integer, String> fds = OpenFds.snapshot();
            server.device.deferRetire = true;
            try {
                assertTimeoutPreemptively(WATCHDOG, () -> {
                    try (VhostUserFrontend fe = negotiated(true, OFFERED & ~PACKED)) {
                        startRing0(fe, mem, kick, call);
                    }
                    server.assertServing();
                    assertNewConnectionAnswers();
                });
                assertEquals(1, MemoryMapperTest.mappingsOf(name), "unmapped before the device let it go");
                OpenFds.assertBackTo(fds, 2); // waits for the connections' own descriptors to go
                Map<Integer, String> kept = new HashMap<>(OpenFds.snapshot());
                kept.keySet().removeAll(fds.keySet());
                assertEquals(Map.of("anon_inode:[eventfd]", 2L), kept.values().stream().collect(
                        Collectors.groupingBy(v -> v, Collectors.counting())),
                        "the ring's call number and the sink it refers to stay open until the device lets them go: " + kept);
                releaseRetired();
                assertEquals(0, MemoryMapperTest.mappingsOf(name), "still mapped once the device let it go");
                OpenFds.assertBackTo(fds);
            } finally {
                server.device.deferRetire = false;
                releaseRetired();
            }
        }
    }

    /** Runs the unmappings the device held back, each once. */
    private void releaseRetired() {
        List<Runnable> held = List.copyOf(server.device.retired);
        server.device.retired.clear();
        held.forEach(Runnable::run);
    }

    /** A descriptor that cannot be made an eventfd (O_PATH: no F_SETFL) is refused and closed. */
    @Test
    void aCallDescriptorThatCannotBeAnEventFdGetsAFailureReplyAndIsClosed() {
        try (FileDescriptor path = openPath("/"); Rejections rejections = new Rejections()) {
            attack(true, fe -> {
                fe.sendRaw(Request.SET_VRING_CALL.code(), NEED, u64(0), path);
                expectFailureAck(fe, Request.SET_VRING_CALL.code());
                rejections.assertNamed("SET_VRING_CALL", "fd");
            });
        }
    }

    /**
     * A kick that is not an eventfd (a memfd, which epoll would not even watch) is the front-end's error, not an
     * internal one: the request gets a failure reply naming the descriptor, the ring stays stopped, the connection
     * goes on.
     */
    @Test
    void aKickThatIsNotAnEventFdGetsAFailureReplyAndTheRingStaysStopped() {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); FileDescriptor notAnEventFd = Memfd.create("kick", 4096);
             EventFd kick = eventFd(); EventFd call = eventFd(); Rejections rejections = new Rejections()) {
            attack(true, fe -> {
                fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER, 0, mem)));
                fe.setVringNum(0, 256);
                fe.setVringAddr(0, USER, USER + 8192, USER + 4096);
                fe.setVringCall(0, call);
                fe.setVringEnable(0, true);
                fe.sendRaw(Request.SET_VRING_KICK.code(), NEED, u64(0), notAnEventFd);
                expectFailureAck(fe, Request.SET_VRING_KICK.code());
                rejections.assertNamed("SET_VRING_KICK", "fd");
                assertFalse(server.device.calls.contains("start 0"), "ring 0 was started: " + server.device.calls);
                fe.setVringKick(0, kick);
                assertTrue(server.device.calls.contains("start 0"), "ring 0 not started: " + server.device.calls);
            });
        }
    }

    /**
     * QEMU sends SET_VRING_CALL on every interrupt mask and unmask, with the ring running: the back-end's
     * descriptors must not grow with them. Each replaced call (or error) eventfd is closed at once, the ring's
     * descriptor number taking the new one: after three replacements the process has exactly the descriptors it had
     * before them.
     */
    @ParameterizedTest(name = "SET_VRING_ERR: {0}")
    @ValueSource(booleans = {false, true})
    void eventFdsReplacedUnderARunningRingAreClosed(boolean err) {
        try (FileDescriptor mem = Memfd.create("hostile", MEM); EventFd kick = eventFd(); EventFd call = eventFd()) {
            attack(true, fe -> {
                startRing0(fe, mem, kick, call);
                if (err) {
                    try (EventFd first = eventFd()) {
                        fe.setVringErr(0, first);
                    }
                }
                assertTrue(server.device.calls.contains("start 0"), "ring 0 not started: " + server.device.calls);
                Map<Integer, String> before = OpenFds.snapshot();
                for (int i = 0; i < 3; i++) {
                    try (EventFd next = eventFd()) {
                        if (err) {
                            fe.setVringErr(0, next);
                        } else {
                            fe.setVringCall(0, next);
                        }
                    }
                }
                assertEquals(before, OpenFds.snapshot());
                assertFalse(server.device.calls.contains("stop 0"), "the ring was stopped: " + server.device.calls);
            });
        }
    }

    /** open(path, O_PATH | O_CLOEXEC): a descriptor that can travel but not be read, written or set non-blocking. */
    private static FileDescriptor openPath(String path) {
        int oPath = 0x200000;
        int oCloexec = 0x80000;
        Linker linker = Linker.nativeLinker();
        MethodHandle open = linker.downcallHandle(linker.defaultLookup().find("open").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) open.invokeExact(arena.allocateFrom(path), oPath | oCloexec);
            return FileDescriptor.adopt(fd);
        } catch (Throwable t) {
            throw new AssertionError("open(" + path + ", O_PATH)", t);
        }
    }

    @Test
    void nofdWithAnFdGetsAFailureReplyAndTheFdIsClosed() {
        try (EventFd a = eventFd()) {
            failureAckFor(Request.SET_VRING_KICK, u64(VringFd.NOFD), a.fileDescriptor());
        }
    }

    @Test
    void kickWithoutFdOrNofdGetsAFailureReply() {
        failureAckFor(Request.SET_VRING_KICK, u64(0));
    }

    // ---- protocol errors without an acknowledgement asked for: the connection is closed ----

    @Test
    void protocolErrorWithoutReplyAckClosesTheConnection() {
        closedBy(false, Request.SET_VRING_NUM.code(), NEED, state(0, 3));
    }

    @Test
    void protocolErrorWithoutNeedReplyClosesTheConnection() {
        closedBy(true, Request.SET_VRING_NUM.code(), V, state(0, 3));
    }

    @Test
    void unknownRequestWithoutReplyAckClosesTheConnection() {
        closedBy(false, 99, V, new byte[0]);
    }
}
