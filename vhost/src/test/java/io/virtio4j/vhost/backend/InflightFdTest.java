package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.MemoryTableDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import io.virtio4j.vhost.protocol.VringAddress;
import io.virtio4j.vhost.protocol.VringFd;
import io.virtio4j.vhost.protocol.VringState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static io.virtio4j.vhost.backend.SessionMessages.message;
import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * GET_INFLIGHT_FD and SET_INFLIGHT_FD in the back-end's session: the area handed out (size, zeroes, seals), every
 * refusal naming its field with every descriptor closed, and the checks a ring start makes against the area.
 * Requests go straight to {@link VhostUserSession#handle}; {@link NoFdLeaks} checks that nothing stays open.
 */
@ExtendWith(NoFdLeaks.class)
class InflightFdTest {
    private static final long SPLIT = FakeDevice.FEATURES & ~VirtioFeatures.bit(VirtioFeatures.RING_PACKED)
            | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
    private static final long PACKED = FakeDevice.FEATURES | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
    private static final long USER = 0x7000_0000_0000L;
    private static final long MEM = 64 * 1024;

    /** Four queues of at most 1024, MQ and INFLIGHT_SHMFD; records starts and what it is given to unmap. */
    private static class Device extends RecordingDevice {
        @Override
        public long features() {
            return FakeDevice.FEATURES;
        }

        @Override
        public long protocolFeatures() {
            return bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.INFLIGHT_SHMFD);
        }

        @Override
        public int maxQueues() {
            return 4;
        }

        @Override
        public int maxQueueSize() {
            return 1024;
        }
    }

    private static VhostUserSession negotiated(VirtioDevice device, long features) throws VhostUserProtocolException {
        return SessionMessages.negotiated(device, bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.INFLIGHT_SHMFD)
                | bit(ProtocolFeatures.REPLY_ACK), features);
    }

    private static void refused(VhostUserSession s, Message m, String field, long value) {
        SessionMessages.refused(s, m, field, value);
        assertNull(s.takeReplyFd(), "no descriptor goes with a refusal");
    }

    private static InflightDescription get(VhostUserSession s, int queues, int queueSize, FileDescriptor[] fdOut)
            throws VhostUserProtocolException {
        byte[] reply = s.handle(message(Request.GET_INFLIGHT_FD, InflightDescription.request(queues, queueSize).encode()));
        fdOut[0] = s.takeReplyFd();
        assertNotNull(fdOut[0], "the area's fd goes with the reply");
        return InflightDescription.decode("reply", MemorySegment.ofArray(reply));
    }

    // ---- GET_INFLIGHT_FD ----

    @Test
    void getAnswersAZeroFilledSealedAreaOfTheLayoutsSize() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        try (VhostUserSession s = negotiated(new Device(), SPLIT)) {
            InflightDescription d = get(s, 4, 1024, fd);
            // DPDK's and libvhost-user's split sizes: 16,448 bytes per queue of 1024, 65,792 for four
            assertEquals(new InflightDescription(65_792, 0, 4, 1024), d);
            assertEquals(65_792, fd[0].size());
            assertEquals(Memfd.F_SEAL_GROW | Memfd.F_SEAL_SHRINK | Memfd.F_SEAL_SEAL, Memfd.seals(fd[0]));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment area = Mmap.mapShared(fd[0], d.mmapSize(), arena);
                for (long at = 0; at < area.byteSize(); at += 8) {
                    assertEquals(0L, area.get(ValueLayout.JAVA_LONG, at), "byte " + at);
                }
            }
        } finally {
            fd[0].close();
        }
    }

    @Test
    void getSizesOneSplitQueueOf1024As16448Bytes() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        try (VhostUserSession s = negotiated(new Device(), SPLIT)) {
            assertEquals(16_448, get(s, 1, 1024, fd).mmapSize());
        } finally {
            fd[0].close();
        }
    }

    @Test
    void getSizesPackedQueuesByThePackedLayout() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        try (VhostUserSession s = negotiated(new Device(), PACKED)) {
            // a packed queue need not be a power of two; 32 + 32 * 1000 rounded up to 64
            InflightDescription d = get(s, 2, 1000, fd);
            assertEquals(2 * 32_064, d.mmapSize());
            assertEquals(InflightLayout.areaBytes(RingFormat.PACKED, 2, 1000), d.mmapSize());
        } finally {
            fd[0].close();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 5, 0xFFFF})
    void getRefusesQueueCountsTheDeviceDoesNotHave(int queues) throws Exception {
        try (VhostUserSession s = negotiated(new Device(), SPLIT)) {
            refused(s, message(Request.GET_INFLIGHT_FD, InflightDescription.request(queues, 256).encode()),
                    "num_queues", queues);
        }
    }

    /** Not a power of two (split), zero, or above the device's 1024. */
    @ParameterizedTest
    @ValueSource(ints = {0, 1000, 2048, 0xFFFF})
    void getRefusesSplitQueueSizesTheDeviceCannotHave(int size) throws Exception {
        try (VhostUserSession s = negotiated(new Device(), SPLIT)) {
            refused(s, message(Request.GET_INFLIGHT_FD, InflightDescription.request(1, size).encode()),
                    "queue_size", size);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1025, 0x8001})
    void getRefusesPackedQueueSizesTheDeviceCannotHave(int size) throws Exception {
        try (VhostUserSession s = negotiated(new Device(), PACKED)) {
            refused(s, message(Request.GET_INFLIGHT_FD, InflightDescription.request(1, size).encode()),
                    "queue_size", size);
        }
    }

    @Test
    void bothAreRefusedWithoutInflightShmfdNegotiated() throws Exception {
        try (VhostUserSession s = new VhostUserSession(new Device(), BackendOptions.defaults());
             FileDescriptor area = Memfd.createSealed("area", 16_448)) {
            s.handle(message(Request.SET_PROTOCOL_FEATURES, new U64(bit(ProtocolFeatures.MQ)).encode()));
            refused(s, message(Request.GET_INFLIGHT_FD, InflightDescription.request(1, 1024).encode()),
                    "protocol_features", bit(ProtocolFeatures.MQ));
            Message set = message(Request.SET_INFLIGHT_FD, new InflightDescription(16_448, 0, 1, 1024).encode(), area);
            refused(s, set, "protocol_features", bit(ProtocolFeatures.MQ));
            assertFalse(area.isOpen(), "the fd of a refused SET_INFLIGHT_FD is closed");
        }
    }

    // ---- SET_INFLIGHT_FD: every refusal names its field and closes the fd ----

    /** Sends SET_INFLIGHT_FD {@code d} with {@code fds} and checks it is refused naming {@code field}; all closed. */
    private static void setRefused(InflightDescription d, String field, long value, FileDescriptor... fds) throws Exception {
        try (VhostUserSession s = negotiated(new Device(), SPLIT)) {
            refused(s, message(Request.SET_INFLIGHT_FD, d.encode(), fds.clone()), field, value); // the message nulls what it closes
        }
        for (FileDescriptor fd : fds) {
            assertFalse(fd.isOpen(), fd + " is closed");
        }
    }

    @Test
    void setRefusesASizeThatIsNotTheQueuesRegions() throws Exception {
        setRefused(new InflightDescription(16_447, 0, 1, 1024), "mmap_size", 16_447, Memfd.createSealed("a", 65_536));
        setRefused(new InflightDescription(16_448 * 2, 0, 1, 1024), "mmap_size", 16_448 * 2,
                Memfd.createSealed("a", 65_536));
    }

    @Test
    void setRefusesARangeBeyondTheFd() throws Exception {
        // the area fits, but not from this offset
        setRefused(new InflightDescription(16_448, 4096, 1, 1024), "mmap_offset", 4096, Memfd.createSealed("a", 16_448));
        // the file is smaller than the area itself
        setRefused(new InflightDescription(16_448, 0, 1, 1024), "mmap_offset", 0, Memfd.createSealed("a", 4096));
    }

    /** Offsets near 2^64: offset + size overflows (signed and unsigned), and must not pass as "inside the fd". */
    @ParameterizedTest
    @ValueSource(longs = {-16_448L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, Long.MAX_VALUE - 16_000})
    void setRefusesOffsetsWhoseEndOverflows(long offset) throws Exception {
        setRefused(new InflightDescription(16_448, offset, 1, 1024), "mmap_offset", offset,
                Memfd.createSealed("a", 65_536));
    }

    @Test
    void setRefusesAMessageWithoutAnFd() throws Exception {
        setRefused(new InflightDescription(16_448, 0, 1, 1024), "fds", 0);
    }

    @Test
    void setRefusesTwoFdsAndClosesBoth() throws Exception {
        setRefused(new InflightDescription(16_448, 0, 1, 1024), "fds", 2,
                Memfd.createSealed("a", 16_448), Memfd.createSealed("b", 16_448));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 5})
    void setRefusesQueueCountsTheDeviceDoesNotHave(int queues) throws Exception {
        setRefused(new InflightDescription(16_448L * queues, 0, queues, 1024), "num_queues", queues,
                Memfd.createSealed("a", 16_448L * 5));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1000, 2048})
    void setRefusesQueueSizesTheDeviceCannotHave(int size) throws Exception {
        setRefused(new InflightDescription(16_448, 0, 1, size), "queue_size", size, Memfd.createSealed("a", 65_536));
    }

    /** The offset is checked before anything is mapped: the region's fields must be aligned, other ends mmap at it. */
    @ParameterizedTest
    @ValueSource(longs = {64, 4095, 4097})
    void setRefusesAnOffsetThatIsNotAPageMultiple(long offset) throws Exception {
        setRefused(new InflightDescription(16_448, offset, 1, 1024), "mmap_offset", offset, Memfd.createSealed("a", 65_536));
    }

    /**
     * An area a DPDK or SPDK back-end allocated (memfd_create without sealing) and the front-end kept: taken, so a
     * VM can move to this back-end, at a page-multiple offset inside a larger file; a ring then records in it.
     */
    @Test
    void setTakesAnUnsealedAreaAtAPageMultipleOffset() throws Exception {
        Device device = new Device();
        long offset = Mmap.pageSize();
        long bytes = InflightLayout.areaBytes(RingFormat.SPLIT, 1, 256);
        try (VhostUserSession s = negotiated(device, SPLIT); FileDescriptor unsealed = Memfd.create("dpdk", offset + bytes);
             Arena arena = Arena.ofConfined()) {
            assertEquals(0, Memfd.seals(unsealed) & Memfd.F_SEAL_SHRINK, "a file the front-end may shrink");
            assertNull(s.handle(message(Request.SET_INFLIGHT_FD, new InflightDescription(bytes, offset, 1, 256).encode(),
                    unsealed.duplicate())));
            memory(s, Memfd.create("guest", MEM));
            startRing(s, 0, 256);
            assertEquals(List.of("start 0"), device.calls);
            MemorySegment seen = Mmap.mapShared(unsealed, offset, bytes, arena);
            assertEquals(InflightLayout.VERSION, seen.get(ValueLayout.JAVA_SHORT_UNALIGNED, InflightLayout.SPLIT_VERSION),
                    "the ring initialised its region at the offset");
        }
    }

    @Test
    void setTakesBackAnAreaAndClosesItsFd() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, SPLIT)) {
            InflightDescription d = get(s, 2, 256, fd);
            FileDescriptor given = fd[0];
            assertNull(s.handle(message(Request.SET_INFLIGHT_FD, d.encode(), given)));
            assertFalse(given.isOpen(), "the back-end keeps the mapping, not the fd");
        }
    }

    /**
     * An unsealed area the front-end shrank before the ring starts: the queue's first look at its region faults
     * (SIGBUS, on the control thread), and the start is refused naming the ring's inflight region; the connection
     * goes on, and the ring starts once the area is whole again.
     */
    @Test
    void aRingWhoseUnsealedAreaWasShrunkIsRefusedNamingItsRegion() throws Exception {
        Device device = new Device();
        long bytes = InflightLayout.areaBytes(RingFormat.SPLIT, 1, 256);
        try (VhostUserSession s = negotiated(device, SPLIT); FileDescriptor unsealed = Memfd.create("dpdk", bytes)) {
            s.handle(message(Request.SET_INFLIGHT_FD, new InflightDescription(bytes, 0, 1, 256).encode(),
                    unsealed.duplicate()));
            Memfd.truncate(unsealed, 0);
            memory(s, Memfd.create("guest", MEM));
            enableRefused(s, 0, 256, "vring[0].inflight", 0);
            assertFalse(device.calls.contains("start 0"), "the ring is not started");
            Memfd.truncate(unsealed, bytes);
            s.handle(message(Request.SET_VRING_ENABLE, new VringState(0, 1).encode()));
            assertEquals(List.of("start 0"), device.calls);
        }
    }

    // ---- ring starts against the area ----

    /** Maps one 64 KiB region at {@link #USER}; rings are carved at 16 KiB per ring index. */
    private static void memory(VhostUserSession s, FileDescriptor memfd) throws VhostUserProtocolException {
        s.handle(message(Request.SET_MEM_TABLE, new MemoryTableDescription(List.of(
                new MemoryRegionDescription(0, MEM, USER, 0))).encode(), memfd));
    }

    /** Sets ring {@code index} up (size {@code num}, polled) and enables it, which starts it. */
    private static Message[] ring(int index, int num) {
        long at = USER + index * 0x4000L;
        return new Message[] {
                message(Request.SET_VRING_NUM, new VringState(index, num).encode()),
                message(Request.SET_VRING_ADDR, new VringAddress(index, 0, at, at + 0x2000, at + 0x1000, 0).encode()),
                message(Request.SET_VRING_KICK, new VringFd(index, true).encode()),
                message(Request.SET_VRING_ENABLE, new VringState(index, 1).encode())};
    }

    /** Sets ring {@code index} up and enables it, which starts it. */
    private static void startRing(VhostUserSession s, int index, int num) throws VhostUserProtocolException {
        for (Message m : ring(index, num)) {
            s.handle(m);
        }
    }

    /** Sets ring {@code index} up; the enable that would start it must be refused naming {@code field}. */
    private static void enableRefused(VhostUserSession s, int index, int num, String field, long value)
            throws VhostUserProtocolException {
        Message[] setup = ring(index, num);
        for (int i = 0; i < setup.length - 1; i++) {
            s.handle(setup[i]);
        }
        refused(s, setup[setup.length - 1], field, value);
    }

    private static long features(RingFormat format) {
        return format == RingFormat.PACKED ? PACKED : SPLIT;
    }

    private static int versionField(RingFormat format) {
        return format == RingFormat.PACKED ? InflightLayout.PACKED_VERSION : InflightLayout.SPLIT_VERSION;
    }

    /**
     * Asserts that region {@code index} of an area for queues of {@code areaSize} was initialised by its ring: at
     * the area's stride, version 1 and desc_num the area's queue size.
     */
    private static void assertInitialised(MemorySegment area, RingFormat format, int areaSize, int index) {
        long region = index * InflightLayout.queueRegionBytes(format, areaSize);
        int descNum = format == RingFormat.PACKED ? InflightLayout.PACKED_DESC_NUM : InflightLayout.SPLIT_DESC_NUM;
        assertEquals(InflightLayout.VERSION, area.get(ValueLayout.JAVA_SHORT_UNALIGNED, region + versionField(format)),
                "ring " + index + " initialised region " + index);
        assertEquals(areaSize, area.get(ValueLayout.JAVA_SHORT_UNALIGNED, region + descNum),
                "desc_num of region " + index + " is the area's queue size");
    }

    private static void startRefused(int ringIndex, int ringSize, int areaQueues, int areaSize, long features,
                                     String field, long value) throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, features)) {
            get(s, areaQueues, areaSize, fd);
            memory(s, Memfd.create("guest", MEM));
            enableRefused(s, ringIndex, ringSize, field, value);
            assertFalse(device.calls.contains("start " + ringIndex), "the ring is not started");
        } finally {
            fd[0].close();
        }
    }

    /** QEMU sizes the area for every queue it starts: a ring beyond it is an error, not a ring run untracked. */
    @Test
    void aRingBeyondTheAreasQueuesIsRefused() throws Exception {
        startRefused(2, 256, 2, 256, SPLIT, "index", 2);
    }

    @Test
    void aRingLargerThanTheAreasQueueSizeIsRefused() throws Exception {
        startRefused(0, 512, 1, 256, SPLIT, "vring[0].num", 512);
    }

    /**
     * QEMU asks for the area with its queue-size property and the guest may choose smaller rings: such a ring starts
     * and records in its region, the regions keeping the stride of the area's queue size.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void aRingSmallerThanTheAreasQueueSizeRecordsInItsRegion(RingFormat format) throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, features(format));
             Arena arena = Arena.ofConfined()) {
            InflightDescription d = get(s, 2, 1024, fd);
            MemorySegment seen = Mmap.mapShared(fd[0], d.mmapSize(), arena);
            memory(s, Memfd.create("guest", MEM));
            startRing(s, 1, 128);
            assertEquals(List.of("start 1"), device.calls);
            // region 1 at the area's stride, desc_num the area's queue size as DPDK writes it
            assertInitialised(seen, format, 1024, 1);
            s.handle(message(Request.GET_VRING_BASE, new VringState(1, 0).encode()));
        } finally {
            fd[0].close();
        }
    }

    @Test
    void aRingOfAnotherFormatThanTheAreasIsRefused() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, SPLIT)) {
            get(s, 1, 256, fd); // a split area; then the front-end renegotiates packed rings
            s.handle(message(Request.SET_FEATURES, new U64(PACKED).encode()));
            memory(s, Memfd.create("guest", MEM));
            enableRefused(s, 0, 256, "features", PACKED);
        } finally {
            fd[0].close();
        }
    }

    /**
     * A started ring records in its own region (the queue initialises a fresh one: version 1, desc_num); an area
     * replaced under a running ring stays mapped until that ring stops, and is then unmapped through the device.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void ringsRecordInTheirSliceAndAReplacedAreaGoesOnlyOnceNoRingHoldsIt(RingFormat format) throws Exception {
        FileDescriptor[] first = new FileDescriptor[1];
        FileDescriptor[] second = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, features(format));
             Arena arena = Arena.ofConfined()) {
            InflightDescription d = get(s, 2, 256, first);
            MemorySegment seen = Mmap.mapShared(first[0], d.mmapSize(), arena);
            memory(s, Memfd.create("guest", MEM));
            startRing(s, 1, 256);
            assertEquals(List.of("start 1"), device.calls);
            assertInitialised(seen, format, 256, 1);
            assertEquals(0, seen.get(ValueLayout.JAVA_SHORT_UNALIGNED, versionField(format)), "region 0 untouched");

            device.deferRetire = true;
            get(s, 2, 256, second); // a new area while ring 1 runs on the first
            assertEquals(List.of(), device.retired, "the first area stays mapped under the running ring");
            s.handle(message(Request.GET_VRING_BASE, new VringState(1, 0).encode()));
            assertEquals(1, device.retired.size(), "unmapped through the device once its last ring stopped");
            device.retired.forEach(Runnable::run);
            device.retired.clear();
            device.deferRetire = false;
        } finally {
            first[0].close();
            second[0].close();
        }
    }

    /**
     * A device that pushed a used entry and did not publish it when its queue is taken back (GET_VRING_BASE): the
     * stop publishes it (the buffer is done, the driver waits for it), the base counts it, the region records the
     * publication, and the ring gives its slice back, so that an area replaced afterwards goes at once.
     */
    @Test
    void aRingStoppedWithAPushedUnpublishedEntryPublishesItAndGivesItsSliceBack() throws Exception {
        FileDescriptor[] first = new FileDescriptor[1];
        FileDescriptor[] second = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, SPLIT); FileDescriptor guest = Memfd.create("guest", MEM);
             Arena arena = Arena.ofConfined()) {
            InflightDescription d = get(s, 1, 256, first);
            MemorySegment area = Mmap.mapShared(first[0], d.mmapSize(), arena);
            MemorySegment mem = Mmap.mapShared(guest, MEM, arena); // guest-physical 0 is offset 0
            long avail = 0x1000;
            long used = 0x2000;
            mem.set(ValueLayout.JAVA_LONG_UNALIGNED, SplitLayout.DESC_ADDR, 0x8000); // one writable buffer of 64
            mem.set(ValueLayout.JAVA_INT_UNALIGNED, SplitLayout.DESC_LEN, 64);
            mem.set(ValueLayout.JAVA_SHORT_UNALIGNED, SplitLayout.DESC_FLAGS, (short) SplitLayout.DESC_F_WRITE);
            mem.set(ValueLayout.JAVA_SHORT_UNALIGNED, avail + SplitLayout.AVAIL_RING, (short) 0);
            mem.set(ValueLayout.JAVA_SHORT_UNALIGNED, avail + SplitLayout.AVAIL_IDX, (short) 1);
            memory(s, guest.duplicate());
            startRing(s, 0, 256);
            DeviceQueue queue = device.started.getFirst().queue();
            DescriptorChain chain = queue.pop();
            assertEquals(0, chain.head());
            queue.pushUsed(chain.head(), 4); // and never published
            assertEquals(0, mem.get(ValueLayout.JAVA_SHORT_UNALIGNED, used + SplitLayout.USED_IDX));

            VringState base = VringState.decode("reply", MemorySegment.ofArray(
                    s.handle(message(Request.GET_VRING_BASE, new VringState(0, 0).encode()))));
            assertEquals(1, base.num(), "the base is past the buffer");
            assertEquals(1, mem.get(ValueLayout.JAVA_SHORT_UNALIGNED, used + SplitLayout.USED_IDX), "published");
            assertEquals(0, mem.get(ValueLayout.JAVA_INT_UNALIGNED, used + SplitLayout.USED_RING + SplitLayout.USED_ELEM_ID));
            assertEquals(4, mem.get(ValueLayout.JAVA_INT_UNALIGNED, used + SplitLayout.USED_RING + SplitLayout.USED_ELEM_LEN));
            assertEquals(1, area.get(ValueLayout.JAVA_SHORT_UNALIGNED, InflightLayout.SPLIT_USED_IDX),
                    "the region records the publication");
            assertEquals(0, area.get(ValueLayout.JAVA_BYTE, InflightLayout.SPLIT_HEADER_SIZE + InflightLayout.SPLIT_ENTRY_INFLIGHT),
                    "the buffer is no longer in flight");

            device.deferRetire = true;
            get(s, 1, 256, second);
            assertEquals(1, device.retired.size(), "the first area went at once: no ring holds it any more");
            device.retired.forEach(Runnable::run);
            device.retired.clear();
            device.deferRetire = false;
        } finally {
            first[0].close();
            if (second[0] != null) {
                second[0].close();
            }
        }
    }

    /**
     * An area handed back with a region no back-end wrote (the front-end can write every byte of it): the ring is
     * not started, and the refusal names the ring and the region's field.
     */
    @Test
    void aRingWhoseRegionIsForgedIsRefusedNamingTheField() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, SPLIT); Arena arena = Arena.ofConfined()) {
            InflightDescription d = get(s, 1, 256, fd);
            MemorySegment forged = Mmap.mapShared(fd[0], d.mmapSize(), arena);
            forged.set(ValueLayout.JAVA_SHORT_UNALIGNED, InflightLayout.SPLIT_VERSION, (short) InflightLayout.VERSION);
            forged.set(ValueLayout.JAVA_SHORT_UNALIGNED, InflightLayout.SPLIT_DESC_NUM, (short) 255);
            memory(s, Memfd.create("guest", MEM));
            enableRefused(s, 0, 256, "vring[0].inflight.desc_num", 255);
            assertFalse(device.calls.contains("start 0"), "the ring is not started");
        } finally {
            fd[0].close();
        }
    }

    /** The connection's end unmaps the area like guest memory: through the device, after its reset. */
    @Test
    void theConnectionsEndUnmapsTheAreaThroughTheDevice() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        Device device = new Device() {
            @Override
            public void reset() {
                calls.add("reset");
            }

            @Override
            public void retire(Runnable unmap) {
                calls.add("retire");
                super.retire(unmap);
            }
        };
        device.deferRetire = true;
        try {
            VhostUserSession s = negotiated(device, SPLIT);
            get(s, 1, 256, fd);
            device.calls.clear();
            s.close();
            // guest memory's and the area's, both after the reset
            assertEquals(List.of("reset", "retire", "retire"), device.calls);
            assertEquals(2, device.retired.size());
        } finally {
            device.retired.forEach(Runnable::run);
            fd[0].close();
        }
    }

    @Test
    void resetDeviceDropsTheArea() throws Exception {
        FileDescriptor[] fd = new FileDescriptor[1];
        Device device = new Device();
        try (VhostUserSession s = negotiated(device, SPLIT)) {
            s.handle(message(Request.SET_PROTOCOL_FEATURES, new U64(bit(ProtocolFeatures.MQ)
                    | bit(ProtocolFeatures.INFLIGHT_SHMFD) | bit(ProtocolFeatures.RESET_DEVICE)).encode()));
            get(s, 1, 256, fd);
            device.deferRetire = true;
            s.handle(message(Request.RESET_DEVICE, new byte[0]));
            assertEquals(1, device.retired.size(), "the area goes through the device's retire path");
            device.retired.forEach(Runnable::run);
            device.deferRetire = false;
        } finally {
            fd[0].close();
        }
    }
}
