package io.virtio4j.devices.net;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.SplitDriverQueue;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.os.Errno;
import io.virtio4j.os.EventFd;
import io.virtio4j.vhost.notify.EventFdNotifier;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Plays a virtio-net guest and its vhost-user front-end (QEMU's part) in this JVM.
 *
 * <p>Guest memory is one memfd mapped here, holding every ring (each on its own 4096-aligned offset), the
 * indirect tables and one buffer pool per ring. It is handed to the back-end as one region whose
 * guest-physical address ({@link #GPA_BASE}) differs from its front-end virtual address ({@link #USER_BASE}):
 * rings are given by user address (SET_VRING_ADDR), descriptors hold guest-physical addresses, so the back-end
 * has to use both translations right. The driver side of each ring is a {@link SplitDriverQueue} over the same
 * mapping, kicking through an eventfd the back-end got with SET_VRING_KICK and waiting for used buffers on the
 * eventfd it got with SET_VRING_CALL.
 *
 * <p>Waiting for used buffers relies on the back-end's notifications (no polling fallback), bounded by a
 * watchdog that fails the test. Single-threaded, like the front-end it wraps: create, use and close it on one
 * thread.
 */
final class VirtioNetGuest implements AutoCloseable {
    static final long GPA_BASE = 0;
    static final long USER_BASE = 0x7000_0000_0000L;
    /** Slot per transmit buffer: header + the largest frame, and room for a separate header element. */
    static final int TX_SLOT = 2048;
    static final int MAX_FRAME = 1514;
    private static final int PAGE = 4096;
    private static final long WAIT_NANOS = 20_000_000_000L;
    private static final ValueLayout.OfShort LE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** What the guest negotiates and how it lays out its rings and buffers. */
    static final class Config {
        int pairs = 1;
        int queueSize = 256;
        int rxBufferSize = 2048;
        boolean mergeable = true;
        boolean eventIdx = true;
        boolean indirect = true;
        /** 1: header and frame in one readable descriptor; 2: header and frame in two (indirect when negotiated). */
        int txSegments = 1;
        boolean replyAck = true;
        /** Send SET_VRING_ENABLE(1) at the end of ring setup. */
        boolean enableRings = true;
        /** Kick and call with NOFD: the back-end polls the rings, the guest polls for used buffers. */
        boolean nofd = false;

        Config pairs(int v) {
            pairs = v;
            return this;
        }

        Config queueSize(int v) {
            queueSize = v;
            return this;
        }

        Config rxBufferSize(int v) {
            rxBufferSize = v;
            return this;
        }

        Config mergeable(boolean v) {
            mergeable = v;
            return this;
        }

        Config eventIdx(boolean v) {
            eventIdx = v;
            return this;
        }

        Config indirect(boolean v) {
            indirect = v;
            return this;
        }

        Config txSegments(int v) {
            txSegments = v;
            return this;
        }

        Config replyAck(boolean v) {
            replyAck = v;
            return this;
        }

        Config enableRings(boolean v) {
            enableRings = v;
            return this;
        }

        Config nofd(boolean v) {
            nofd = v;
            return this;
        }

        /** Virtio feature bits the guest acks (the front-end adds bit 30). */
        long features() {
            return VirtioFeatures.bit(VirtioFeatures.VERSION_1)
                    | (eventIdx ? VirtioFeatures.bit(VirtioFeatures.EVENT_IDX) : 0)
                    | (indirect ? VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) : 0)
                    | (mergeable ? VirtioFeatures.bit(NetFeatures.MRG_RXBUF) : 0)
                    | (pairs > 1 ? VirtioFeatures.bit(NetFeatures.MQ) : 0);
        }

        long protocolFeatures() {
            return bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.CONFIG) | bit(ProtocolFeatures.STATUS)
                    | bit(ProtocolFeatures.CONFIGURE_MEM_SLOTS) | bit(ProtocolFeatures.RESET_DEVICE)
                    | (replyAck ? bit(ProtocolFeatures.REPLY_ACK) : 0);
        }
    }

    /** A frame as received: num_buffers from its header, the buffers' used lengths and the frame bytes. */
    record RxFrame(int numBuffers, int[] usedLengths, byte[] frame) {
    }

    /** One ring as the guest drives it. */
    final class Ring {
        final int index;
        final boolean receive;
        final SplitRingAreas areas;
        final SplitDriverQueue queue;
        final EventFdNotifier kick = new EventFdNotifier();
        final EventFdNotifier call = new EventFdNotifier();
        private final long bufferOffset;
        private final int bufferSize;
        private final ArrayDeque<Integer> free = new ArrayDeque<>();

        Ring(int index, long areaOffset, long bufferOffset, int bufferSize, long indirectOffset) {
            this.index = index;
            this.receive = index % 2 == 0;
            this.areas = SplitRingAreas.carve(memory.asSlice(areaOffset, SplitRingAreas.contiguousBytes(config.queueSize)),
                    config.queueSize);
            this.bufferOffset = bufferOffset;
            this.bufferSize = bufferSize;
            DriverOptions o = DriverOptions.defaults();
            if (indirectOffset >= 0) {
                long bytes = DriverOptions.indirectTablesBytes(config.queueSize, 2);
                o = o.withIndirect(memory.asSlice(indirectOffset, bytes), GPA_BASE + indirectOffset, 2, 2);
            }
            this.queue = new SplitDriverQueue(areas, o.forFeatures(config.features()), kick);
            for (int i = 0; i < config.queueSize; i++) {
                free.add(i);
            }
        }

        long descUser() {
            return userAddr(areas.descTable());
        }

        long availUser() {
            return userAddr(areas.availRing());
        }

        long usedUser() {
            return userAddr(areas.usedRing());
        }

        int freeSlots() {
            return free.size();
        }

        long slotOffset(int slot) {
            return bufferOffset + (long) slot * bufferSize;
        }

        /** Reaps one used buffer, waiting for the back-end's notification when there is none; returns its slot. */
        int awaitUsed() {
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (true) {
                Object token = queue.pollUsed();
                if (token != null) {
                    return (Integer) token;
                }
                if (config.nofd) {
                    if (System.nanoTime() - deadline > 0) {
                        fail("ring " + index + ": no used buffer within " + WAIT_NANOS / 1_000_000 + " ms (polling); "
                                + queue.inFlight() + " buffers in flight");
                    }
                    Thread.yield();
                } else if (!queue.enableCallbacksOrFindPending()) {
                    long left = deadline - System.nanoTime();
                    boolean signalled;
                    try {
                        signalled = left > 0 && call.await(left);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new AssertionError("interrupted waiting on ring " + index, e);
                    }
                    if (!signalled && deadline - System.nanoTime() <= 0) {
                        fail("ring " + index + ": no used buffer and no notification within " + WAIT_NANOS / 1_000_000
                                + " ms; " + queue.inFlight() + " buffers in flight");
                    }
                }
            }
        }

        /** Reaps every used buffer there is, without waiting; returns how many. */
        int reapAvailable() {
            int n = 0;
            Object token;
            while ((token = queue.pollUsed()) != null) {
                free.add((Integer) token);
                n++;
            }
            return n;
        }

        void kick() {
            queue.kick();
        }
    }

    private final Config config;
    private final Arena arena = Arena.ofShared();
    private final FileDescriptor memfd;
    private final MemorySegment memory;
    private final List<Ring> rings = new ArrayList<>();
    private final ScatterGather sg = new ScatterGather(2);
    private VhostUserFrontend frontend;
    private long negotiated;
    private boolean closed;

    private VirtioNetGuest(Config config) {
        this.config = config;
        int qs = config.queueSize;
        long ringBytes = SplitLayout.roundUp(SplitRingAreas.contiguousBytes(qs), PAGE);
        long indirectBytes = SplitLayout.roundUp(DriverOptions.indirectTablesBytes(qs, 2), PAGE);
        long txPool = SplitLayout.roundUp((long) qs * TX_SLOT, PAGE);
        long rxPool = SplitLayout.roundUp((long) qs * config.rxBufferSize, PAGE);
        int n = 2 * config.pairs;
        long size = n * ringBytes + config.pairs * (indirectBytes + txPool + rxPool);
        FileDescriptor fd = Memfd.create("virtio4j-test-guest", size);
        try {
            this.memfd = fd;
            this.memory = Mmap.mapShared(fd, size, arena);
        } catch (RuntimeException e) {
            fd.close();
            arena.close();
            throw e;
        }
        long at = n * ringBytes;
        for (int i = 0; i < n; i++) {
            boolean rx = i % 2 == 0;
            long indirect = -1;
            if (!rx) {
                indirect = at;
                at += indirectBytes;
            }
            long pool = at;
            at += rx ? rxPool : txPool;
            rings.add(new Ring(i, i * ringBytes, pool, rx ? config.rxBufferSize : TX_SLOT, indirect));
        }
    }

    /** Connects to the back-end at {@code path} and sets everything up as {@code config} says. */
    static VirtioNetGuest connect(Path path, Config config) {
        VirtioNetGuest g = new VirtioNetGuest(config);
        try {
            g.frontend = connectWithRetry(path);
            g.negotiate();
            g.frontend.setMemTable(List.of(g.region()));
            for (Ring r : g.rings) {
                g.setupRing(r, 0);
            }
            return g;
        } catch (RuntimeException | Error e) {
            g.close();
            throw e;
        }
    }

    /** Connects, retrying while the server is not listening yet. */
    static VhostUserFrontend connectWithRetry(Path path) {
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (true) {
            try {
                return VhostUserFrontend.connect(path);
            } catch (LinuxException e) {
                if ((e.errno() != Errno.ENOENT && e.errno() != Errno.ECONNREFUSED) || System.nanoTime() - deadline > 0) {
                    throw e;
                }
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while connecting", e);
            }
        }
    }

    private void negotiate() {
        long offered = frontend.getFeatures();
        long want = config.features() | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
        assertEquals(0, want & ~offered, "back-end does not offer feature bits 0x" + Long.toHexString(want & ~offered));
        frontend.setFeatures(want);
        negotiated = want;
        long pOffered = frontend.getProtocolFeatures();
        long pWant = config.protocolFeatures();
        assertEquals(0, pWant & ~pOffered, "back-end does not offer protocol feature bits 0x"
                + Long.toHexString(pWant & ~pOffered));
        frontend.setProtocolFeatures(pWant);
        frontend.setOwner();
        assertEquals(config.pairs, frontend.getQueueNum(), "GET_QUEUE_NUM: queue pairs");
    }

    /** SET_VRING_NUM, _BASE, _ADDR (front-end virtual addresses), _KICK, _CALL and, if configured, _ENABLE. */
    void setupRing(Ring r, int base) {
        frontend.setVringNum(r.index, config.queueSize);
        frontend.setVringBase(r.index, base);
        frontend.setVringAddr(r.index, r.descUser(), r.usedUser(), r.availUser());
        frontend.setVringKick(r.index, config.nofd ? null : r.kick.eventFd());
        frontend.setVringCall(r.index, config.nofd ? null : r.call.eventFd());
        if (config.enableRings) {
            frontend.setVringEnable(r.index, true);
        }
    }

    /** The single memory region: the whole memfd, at guest-physical {@link #GPA_BASE} and user {@link #USER_BASE}. */
    VhostUserFrontend.Region region() {
        return new VhostUserFrontend.Region(GPA_BASE, memory.byteSize(), USER_BASE, 0, memfd);
    }

    long userAddr(MemorySegment s) {
        return USER_BASE + (s.address() - memory.address());
    }

    long gpa(long offset) {
        return GPA_BASE + offset;
    }

    VhostUserFrontend frontend() {
        return frontend;
    }

    Config config() {
        return config;
    }

    long negotiatedFeatures() {
        return negotiated;
    }

    MemorySegment memory() {
        return memory;
    }

    FileDescriptor memfd() {
        return memfd;
    }

    Ring ring(int index) {
        return rings.get(index);
    }

    Ring rx(int pair) {
        return rings.get(2 * pair);
    }

    Ring tx(int pair) {
        return rings.get(2 * pair + 1);
    }

    // ---- transmit ----

    /** Puts one frame (after a zero virtio_net_hdr) on pair {@code pair}'s transmit ring; no kick. */
    void addTx(int pair, byte[] frame) {
        addTx(pair, frame, frame.length);
    }

    /** Puts the first {@code len} bytes of {@code frame} on the transmit ring; no kick. */
    void addTx(int pair, byte[] frame, int len) {
        Ring t = tx(pair);
        Integer slot = t.free.poll();
        if (slot == null) {
            throw new IllegalStateException("transmit ring " + t.index + " has no free slot");
        }
        long off = t.slotOffset(slot);
        sg.clear();
        if (config.txSegments == 1) {
            memory.asSlice(off, NetFeatures.HDR_LEN).fill((byte) 0);
            MemorySegment.copy(frame, 0, memory, ValueLayout.JAVA_BYTE, off + NetFeatures.HDR_LEN, len);
            sg.readable(gpa(off), NetFeatures.HDR_LEN + len);
        } else {
            memory.asSlice(off, NetFeatures.HDR_LEN).fill((byte) 0);
            MemorySegment.copy(frame, 0, memory, ValueLayout.JAVA_BYTE, off + 16, len);
            sg.readable(gpa(off), NetFeatures.HDR_LEN).readable(gpa(off + 16), len);
        }
        t.queue.add(sg, slot);
    }

    /**
     * Forgets every buffer in flight and zeroes the rings' shared headers (the driver's side of a device reset);
     * every slot is free again.
     */
    void resetQueues() {
        for (Ring r : rings) {
            r.queue.reset();
            r.free.clear();
            for (int i = 0; i < config.queueSize; i++) {
                r.free.add(i);
            }
        }
    }

    /** Sets the device up again after a reset, as QEMU starts it: features, memory table, every ring from base 0. */
    void setupAgain() {
        frontend.setFeatures(negotiated);
        frontend.setMemTable(List.of(region()));
        for (Ring r : rings) {
            setupRing(r, 0);
        }
    }

    /** Adds a raw writable receive buffer (e.g. pointing outside guest memory); the slot is taken like any other. */
    void addRawRx(int pair, long gpa, int len) {
        Ring r = rx(pair);
        Integer slot = r.free.poll();
        if (slot == null) {
            throw new IllegalStateException("receive ring " + r.index + " has no free slot");
        }
        sg.clear().writable(gpa, len);
        r.queue.add(sg, slot);
    }

    /** Adds a raw transmit chain (e.g. pointing outside guest memory); the slot is taken like any other. */
    void addRawTx(int pair, long gpa, int len) {
        Ring t = tx(pair);
        Integer slot = t.free.poll();
        if (slot == null) {
            throw new IllegalStateException("transmit ring " + t.index + " has no free slot");
        }
        sg.clear().readable(gpa, len);
        t.queue.add(sg, slot);
    }

    /**
     * Transmits {@code count} random frames of 60..1514 bytes on pair {@code pair}, keeping the ring as full as
     * it goes, and waits until the back-end has returned every buffer. Returns the frame bytes sent.
     */
    long transmitRandom(int pair, int count, Random rnd) {
        Ring t = tx(pair);
        byte[] template = new byte[MAX_FRAME];
        rnd.nextBytes(template);
        long bytes = 0;
        int sent = 0;
        while (sent < count) {
            int added = 0;
            while (sent < count && t.freeSlots() > 0) {
                int len = 60 + rnd.nextInt(MAX_FRAME - 60 + 1);
                template[0] = (byte) sent; // vary the content a little without regenerating it
                addTx(pair, template, len);
                bytes += len;
                sent++;
                added++;
            }
            if (added > 0) {
                t.kick();
            }
            if (sent < count) {
                t.free.add(t.awaitUsed());
                t.reapAvailable();
            }
        }
        awaitTxDone(pair);
        return bytes;
    }

    /** Waits until every transmit buffer of the pair has come back. */
    void awaitTxDone(int pair) {
        Ring t = tx(pair);
        t.kick();
        while (t.queue.inFlight() > 0) {
            t.free.add(t.awaitUsed());
            t.reapAvailable();
        }
    }

    // ---- receive ----

    /** Posts a writable buffer in every free slot of the pair's receive ring and kicks. */
    void refillRx(int pair) {
        Ring r = rx(pair);
        Integer slot;
        while ((slot = r.free.poll()) != null) {
            sg.clear().writable(gpa(r.slotOffset(slot)), r.bufferSize);
            r.queue.add(sg, slot);
        }
        r.kick();
    }

    /** Receive buffers one frame of {@code len} bytes takes. */
    int buffersFor(int len) {
        return config.mergeable ? (NetFeatures.HDR_LEN + len + config.rxBufferSize - 1) / config.rxBufferSize : 1;
    }

    /**
     * Receives one frame from the pair's receive ring: the first buffer's header says how many buffers it
     * spans (num_buffers); those are reaped in order and their data concatenated.
     */
    RxFrame receive(int pair) {
        Ring r = rx(pair);
        int slot = r.awaitUsed();
        int len = (int) r.queue.lastUsedLength();
        long off = r.slotOffset(slot);
        assertTrue(len >= NetFeatures.HDR_LEN, "first receive buffer holds " + len + " bytes, less than the header");
        int numBuffers = Short.toUnsignedInt(memory.get(LE_SHORT, off + NetFeatures.HDR_NUM_BUFFERS));
        assertTrue(numBuffers >= 1 && numBuffers <= config.queueSize, "num_buffers " + numBuffers);
        for (int i = 0; i < NetFeatures.HDR_NUM_BUFFERS; i++) {
            assertEquals(0, memory.get(ValueLayout.JAVA_BYTE, off + i), "virtio_net_hdr byte " + i + " (no offloads)");
        }
        int[] lens = new int[numBuffers];
        lens[0] = len;
        ByteArrayOutputStream out = new ByteArrayOutputStream(MAX_FRAME);
        out.write(copy(off + NetFeatures.HDR_LEN, len - NetFeatures.HDR_LEN), 0, len - NetFeatures.HDR_LEN);
        r.free.add(slot);
        for (int i = 1; i < numBuffers; i++) {
            int s = r.awaitUsed();
            int l = (int) r.queue.lastUsedLength();
            lens[i] = l;
            out.write(copy(r.slotOffset(s), l), 0, l);
            r.free.add(s);
        }
        return new RxFrame(numBuffers, lens, out.toByteArray());
    }

    private byte[] copy(long offset, int len) {
        byte[] b = new byte[len];
        MemorySegment.copy(memory, ValueLayout.JAVA_BYTE, offset, b, 0, len);
        return b;
    }

    /**
     * Sends {@code frames} on the pair's transmit ring with its receive ring filled first, and receives as many
     * frames back (loopback and macswap modes). The frames must fit the free transmit slots and the receive
     * buffers.
     */
    List<RxFrame> echo(int pair, List<byte[]> frames) {
        refillRx(pair);
        int need = 0;
        for (byte[] f : frames) {
            need += buffersFor(f.length);
        }
        if (need > rx(pair).queue.inFlight() || frames.size() > tx(pair).freeSlots()) {
            throw new IllegalArgumentException(frames.size() + " frames need " + need + " receive buffers of "
                    + rx(pair).queue.inFlight() + " posted and " + frames.size() + " transmit slots of " + tx(pair).freeSlots());
        }
        for (byte[] f : frames) {
            addTx(pair, f);
        }
        tx(pair).kick();
        List<RxFrame> got = new ArrayList<>(frames.size());
        for (int i = 0; i < frames.size(); i++) {
            got.add(receive(pair));
        }
        awaitTxDone(pair);
        return got;
    }

    /** A frame of {@code len} bytes: random unicast destination and source MACs, IPv4 ethertype, random payload. */
    static byte[] randomFrame(Random rnd, int len) {
        byte[] f = new byte[len];
        rnd.nextBytes(f);
        f[0] &= (byte) 0xFE;
        f[6] &= (byte) 0xFE;
        f[12] = 0x08;
        f[13] = 0x00;
        return f;
    }

    /** Closes the front-end connection only (the guest's memory and eventfds stay). */
    void disconnect() {
        if (frontend != null) {
            frontend.close();
            frontend = null;
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        disconnect();
        for (Ring r : rings) {
            r.kick.close();
            r.call.close();
        }
        memfd.close();
        arena.close();
    }

    /** The kick eventfd of a ring, for messages the test sends itself. */
    EventFd kickFd(int ring) {
        return rings.get(ring).kick.eventFd();
    }

    EventFd callFd(int ring) {
        return rings.get(ring).call.eventFd();
    }
}
