package io.virtio4j.devices.net.driver;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.net.NetFeatures;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.vhost.frontend.DriverRing;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import io.virtio4j.vhost.frontend.NegotiationFailedException;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;

/**
 * The driver side of virtio-net over vhost-user: what a guest's virtio-net driver and its VMM's front-end do
 * together, in this JVM, against any vhost-user net back-end (ours served in-process or over a socket, or another
 * implementation).
 *
 * <p>The vhost-user side (negotiation, guest memory, rings, eventfds, start, reset) is a {@link FrontendSession}'s;
 * this class adds virtio-net's buffers. Guest memory is one memfd mapped here ({@link GuestMemory}), holding every
 * ring (each on its own pages, the rings first), the transmit rings' indirect tables and one buffer pool per ring. It is handed to the back-end as one region at guest-physical
 * address {@link Config#guestPhysBase()} and front-end virtual address {@link Config#userBase()}: rings are given
 * by user address (SET_VRING_ADDR), descriptors hold guest-physical addresses, so with two different bases a
 * back-end has to use both translations right. Ring {@code 2p} receives and ring {@code 2p + 1} transmits for
 * queue pair {@code p}; each is a {@link DriverQueue} over the mapping, kicking through the eventfd the
 * back-end got with SET_VRING_KICK and waiting for used buffers on the one it got with SET_VRING_CALL (or, with
 * {@link Config#eventFds()} off, NOFD: both sides poll).
 *
 * <p>Receiving and transmitting allocate nothing: buffer slots are int stacks, tokens are boxed once, and a
 * received frame is assembled in a per-ring staging segment that the {@link FrameHandler} reads. Each ring is
 * driven by one thread at a time (a receive ring and a transmit ring may be driven by two); negotiation, reset,
 * set-up and close by one thread while no ring is driven.
 */
public final class NetDriver implements AutoCloseable {
    /** Bytes per transmit slot: the 12-byte header, and a frame of up to 2032 bytes (2036 in one descriptor). */
    public static final int TX_SLOT = 2048;
    /** Where the frame starts in a transmit slot when header and frame are two descriptors. */
    private static final int SPLIT_FRAME_OFFSET = 16;
    /** Longest frame (header included) one receive ring assembles from merged buffers. */
    public static final int MAX_RECEIVED = NetFeatures.HDR_LEN + 65536;
    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * What the driver negotiates and how it lays out its rings and buffers.
     *
     * @param pairs         queue pairs driven (VIRTIO_NET_F_MQ when more than one)
     * @param queueSize     entries per ring
     * @param rxBufferSize  bytes per receive buffer
     * @param mergeable     VIRTIO_NET_F_MRG_RXBUF: a frame may span several receive buffers
     * @param eventIdx      VIRTIO_F_EVENT_IDX
     * @param indirect      VIRTIO_F_INDIRECT_DESC (used for two-descriptor transmit chains)
     * @param txSegments    1: header and frame in one readable descriptor; 2: in two
     * @param replyAck      negotiate REPLY_ACK: every request that can fail is acknowledged
     * @param enableRings   send SET_VRING_ENABLE(1) at the end of each ring's set-up
     * @param eventFds      kick and call through eventfds; false: NOFD, the back-end polls the rings and the
     *                      driver polls for used buffers
     * @param guestPhysBase guest-physical address of the start of guest memory (what descriptors hold)
     * @param userBase      front-end virtual address of the start of guest memory (what SET_VRING_ADDR holds)
     * @param format        split or packed rings (VIRTIO_F_RING_PACKED)
     * @param inOrder       VIRTIO_F_IN_ORDER
     * @param publication   when every ring's driver queue publishes what it added ({@code avail.idx}, or a packed
     *                      ring's first-descriptor flags): per buffer, once per kick, or adaptively
     */
    public record Config(int pairs, int queueSize, int rxBufferSize, boolean mergeable, boolean eventIdx,
                         boolean indirect, int txSegments, boolean replyAck, boolean enableRings, boolean eventFds,
                         long guestPhysBase, long userBase, RingFormat format, boolean inOrder,
                         AvailPublication publication) {
        public Config {
            if (format == null || publication == null) {
                throw new IllegalArgumentException("a ring format and a publication policy are required");
            }
            if (pairs < 1 || pairs > 0x8000 || !format.isValidQueueSize(queueSize)
                    || rxBufferSize < NetFeatures.HDR_LEN + 14 || (txSegments != 1 && txSegments != 2)) {
                throw new IllegalArgumentException("bad driver config: " + pairs + " pairs, queue size " + queueSize
                        + ", receive buffers of " + rxBufferSize + " bytes, " + txSegments + " transmit segments");
            }
            if (guestPhysBase < 0 || userBase < 0 || guestPhysBase % GuestMemory.PAGE != 0
                    || userBase % GuestMemory.PAGE != 0) {
                throw new IllegalArgumentException("bases must be page-aligned and non-negative: guest-physical 0x"
                        + Long.toHexString(guestPhysBase) + ", user 0x" + Long.toHexString(userBase));
            }
        }

        /**
         * One pair of 256-entry rings, 2048-byte merged receive buffers, EVENT_IDX, indirect descriptors, one
         * transmit descriptor, REPLY_ACK, rings enabled, eventfds, eager publication; guest memory at guest-physical
         * 0 and user address 0x7000_0000_0000 (different on purpose).
         */
        public static Config defaults() {
            return new Config(1, 256, 2048, true, true, true, 1, true, true, true, 0, 0x7000_0000_0000L, RingFormat.SPLIT,
                    false, AvailPublication.EAGER);
        }

        public Config withPairs(int v) {
            return new Config(v, queueSize, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withRxBufferSize(int v) {
            return new Config(pairs, queueSize, v, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withMergeable(boolean v) {
            return new Config(pairs, queueSize, rxBufferSize, v, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withEventIdx(boolean v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, v, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withIndirect(boolean v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, v, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withTxSegments(int v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, indirect, v, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withEnableRings(boolean v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    v, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withEventFds(boolean v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, v, guestPhysBase, userBase, format, inOrder, publication);
        }

        public Config withBases(long guestPhys, long user) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhys, user, format, inOrder, publication);
        }

        /** Split or packed rings; a packed ring's size need not be a power of two. */
        public Config withFormat(RingFormat v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, v, inOrder, publication);
        }

        public Config withInOrder(boolean v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, v, publication);
        }

        /** When the rings publish added buffers to the device (see {@link AvailPublication}). */
        public Config withPublication(AvailPublication v) {
            return new Config(pairs, queueSize, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, v);
        }

        public Config withQueueSize(int v) {
            return new Config(pairs, v, rxBufferSize, mergeable, eventIdx, indirect, txSegments, replyAck,
                    enableRings, eventFds, guestPhysBase, userBase, format, inOrder, publication);
        }

        /** Virtio feature bits the driver acks (the front-end adds bit 30, VHOST_USER_F_PROTOCOL_FEATURES). */
        public long features() {
            return VirtioFeatures.bit(VirtioFeatures.VERSION_1)
                    | (eventIdx ? VirtioFeatures.bit(VirtioFeatures.EVENT_IDX) : 0)
                    | (indirect ? VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) : 0)
                    | (mergeable ? VirtioFeatures.bit(NetFeatures.MRG_RXBUF) : 0)
                    | (pairs > 1 ? VirtioFeatures.bit(NetFeatures.MQ) : 0)
                    | (format == RingFormat.PACKED ? VirtioFeatures.bit(VirtioFeatures.RING_PACKED) : 0)
                    | (inOrder ? VirtioFeatures.bit(VirtioFeatures.IN_ORDER) : 0);
        }

        /**
         * Protocol features the driver asks for; those the back-end does not offer are left out, except MQ when
         * more than one pair is driven and REPLY_ACK when {@link #replyAck()} (see
         * {@link NetDriver#negotiatedProtocolFeatures()}).
         */
        public long protocolFeatures() {
            return bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.CONFIG) | bit(ProtocolFeatures.STATUS)
                    | bit(ProtocolFeatures.CONFIGURE_MEM_SLOTS) | bit(ProtocolFeatures.RESET_DEVICE)
                    | (replyAck ? bit(ProtocolFeatures.REPLY_ACK) : 0);
        }

        long requiredProtocolFeatures() {
            return (pairs > 1 ? bit(ProtocolFeatures.MQ) : 0) | (replyAck ? bit(ProtocolFeatures.REPLY_ACK) : 0);
        }

        /** Receive buffers a frame of {@code frameLength} bytes (header not counted) takes. */
        public int buffersFor(int frameLength) {
            return mergeable ? (NetFeatures.HDR_LEN + frameLength + rxBufferSize - 1) / rxBufferSize : 1;
        }
    }

    /**
     * Receives frames: {@code frame} holds the virtio_net_hdr then the Ethernet frame, {@code length} bytes in
     * all, assembled from {@code numBuffers} receive buffers ({@link #usedLength} gives each one's length). Valid
     * only during the call.
     */
    @FunctionalInterface
    public interface FrameHandler {
        void frame(MemorySegment frame, long length, int numBuffers);
    }

    /** One ring as the driver drives it: the session's ring and this driver's buffer slots. */
    private final class Ring {
        final int index;
        final DriverRing ring;
        final DriverQueue queue;
        final long pool;
        final int slotSize;
        final int[] free;
        int freeCount;
        final Integer[] tokens;
        final ScatterGather sg = new ScatterGather(2);
        /** Receive: the frame being assembled, and the used length of each of its buffers. */
        final MemorySegment staging;
        final int[] usedLengths;
        long assembled;
        int buffersDone;
        int numBuffers;

        Ring(DriverRing ring, long pool, int slotSize, MemorySegment staging) {
            this.index = ring.index();
            this.ring = ring;
            this.queue = ring.queue();
            int qs = config.queueSize();
            this.pool = pool;
            this.slotSize = slotSize;
            this.staging = staging;
            this.usedLengths = staging == null ? null : new int[qs];
            this.free = new int[qs];
            this.tokens = new Integer[qs];
            for (int i = 0; i < qs; i++) {
                tokens[i] = i; // boxed once: tokens of buffers in flight cost no allocation
            }
            refill();
        }

        void refill() {
            freeCount = 0;
            for (int i = free.length - 1; i >= 0; i--) {
                free[freeCount++] = i;
            }
            assembled = 0;
            buffersDone = 0;
            numBuffers = 0;
        }

        long slotOffset(int slot) {
            return pool + (long) slot * slotSize;
        }

        /** Reclaims every used buffer there is; returns how many. */
        int reap() {
            int n = 0;
            Object token;
            while ((token = queue.pollUsed()) != null) {
                free[freeCount++] = (Integer) token;
                n++;
            }
            return n;
        }
    }

    private final Config config;
    /** For the receive rings' staging segments. */
    private final Arena arena = Arena.ofShared();
    private final FrontendSession session;
    private final GuestMemory guest;
    /** {@code guest}'s mapping. */
    private final MemorySegment memory;
    private final List<Ring> rings = new ArrayList<>();
    private boolean closed;

    /** Negotiates through {@code session}, then carves guest memory (see {@link #setUp}). */
    private NetDriver(Config config, FrontendSession session) {
        this.config = config;
        this.session = session;
        try {
            this.guest = setUp(config, session);
        } catch (RuntimeException | Error e) {
            arena.close(); // the session (memory, eventfds) is closed by the caller
            throw e;
        }
        this.memory = guest.memory();
    }

    /** Negotiates, then carves guest memory: every ring first (with its indirect tables), then the buffer pools. */
    private GuestMemory setUp(Config config, FrontendSession session) {
        // No inflight area even when a back-end offers one (DPDK's does): a packet lost with a dying back-end is
        // resent by the protocols above, one sent twice is worse, and QEMU's vhost-user-net never asks for it.
        session.useInflight(false);
        session.negotiate(config.features(), config.features(), config.protocolFeatures(),
                config.requiredProtocolFeatures(), config.pairs());
        int qs = config.queueSize();
        int n = 2 * config.pairs();
        int indirectElements = config.indirect() ? 2 : 0;
        long rxPool = GuestMemory.roundUp((long) qs * config.rxBufferSize(), GuestMemory.PAGE);
        long txPool = GuestMemory.roundUp((long) qs * TX_SLOT, GuestMemory.PAGE);
        long size = config.pairs() * (FrontendSession.ringBytes(config.format(), qs)
                + FrontendSession.ringBytes(config.format(), qs, indirectElements) + rxPool + txPool);
        GuestMemory guest = GuestMemory.create("virtio4j-net-driver", size, config.guestPhysBase(), config.userBase(),
                false);
        session.attach(guest);
        List<DriverRing> added = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            boolean rx = i % 2 == 0;
            // transmit rings only: receive chains are one buffer
            added.add(session.addRing(config.format(), qs, rx ? 0 : indirectElements,
                    DriverOptions.defaults().withPublication(config.publication()),
                    config.eventFds()));
        }
        for (DriverRing r : added) {
            boolean rx = r.index() % 2 == 0;
            long pool = guest.carve(rx ? rxPool : txPool, GuestMemory.PAGE);
            rings.add(new Ring(r, pool, rx ? config.rxBufferSize() : TX_SLOT,
                    rx ? arena.allocate(MAX_RECEIVED, 8) : null));
        }
        return guest;
    }

    /**
     * Sets the driver up against the back-end behind {@code frontend}, which the driver then owns and closes:
     * features, protocol features, owner, queue pairs, the memory table and every ring. Closes {@code frontend}
     * when it fails.
     *
     * @throws NegotiationFailedException when the back-end does not offer what {@code config} needs
     */
    public static NetDriver start(VhostUserFrontend frontend, Config config) {
        return start(FrontendSession.over(frontend), config);
    }

    /** {@link #start(VhostUserFrontend, Config)} over a session: connected, or listening for a back-end. */
    public static NetDriver start(FrontendSession session, Config config) {
        NetDriver d;
        try {
            d = new NetDriver(config, session);
        } catch (RuntimeException | Error e) {
            session.close();
            throw e;
        }
        try {
            session.start(session.initialBases(), config.enableRings());
            return d;
        } catch (RuntimeException | Error e) {
            d.close();
            throw e;
        }
    }

    /** The session underneath: stop, reset, reconnect, raw requests. */
    public FrontendSession session() {
        return session;
    }

    /**
     * The SET_VRING_BASE value of a ring that starts afresh: avail index 0 for split; for packed both positions 0
     * with both wrap counters 1 (vhost-user's packed encoding, as QEMU sends it).
     */
    public long initialBase() {
        return FrontendSession.initialBase(config.format());
    }

    /**
     * SET_VRING_NUM, _BASE ({@code base}), _ADDR (front-end virtual addresses), _KICK, _CALL and, if
     * {@link Config#enableRings()}, _ENABLE for ring {@code ring}.
     */
    public void setUpRing(int ring, long base) {
        session.setUpRing(ring, base, config.enableRings());
    }

    /**
     * The driver's side of a device reset: takes back every buffer still in flight (the device is stopped and will
     * not return them), forgets any frame half received, and initialises the rings afresh; every slot is free
     * again. The back-end's side is the caller's (RESET_DEVICE, or GET_VRING_BASE on every ring), and comes first.
     *
     * @return the buffers taken back unused
     */
    public int resetRings() {
        int takenBack = 0;
        for (Ring r : rings) {
            while (r.queue.detachUnused() != null) {
                takenBack++;
            }
            r.queue.reset();
            r.refill();
        }
        return takenBack;
    }

    /** Sets the device up again after a reset, as QEMU starts it: the same features, memory table, every ring from 0. */
    public void setUpAgain() {
        session.start(session.initialBases(), config.enableRings());
    }

    /** Closes the vhost-user connection only (the back-end stops its rings); memory and eventfds stay. */
    public void disconnect() {
        session.disconnect();
    }

    /** The front-end, for requests of the caller's own. */
    public VhostUserFrontend frontend() {
        return session.frontend();
    }

    public Config config() {
        return config;
    }

    /** Protocol features set with SET_PROTOCOL_FEATURES. */
    public long negotiatedProtocolFeatures() {
        return session.protocolFeatures();
    }

    /** Queue pairs the back-end has (GET_QUEUE_NUM; 1 without MQ). */
    public long maxQueuePairs() {
        return session.queueNum();
    }

    /** The single memory region: the whole memfd, at {@link Config#guestPhysBase()} and {@link Config#userBase()}. */
    public VhostUserFrontend.Region region() {
        return guest.region();
    }

    /** Guest memory as mapped here. */
    public MemorySegment memory() {
        return memory;
    }

    public FileDescriptor memfd() {
        return guest.fd();
    }

    /** The guest-physical address of {@code offset} in guest memory. */
    public long gpa(long offset) {
        return guest.gpa(offset);
    }

    /** Index of the pair's receive ring. */
    public static int rxRing(int pair) {
        return 2 * pair;
    }

    /** Index of the pair's transmit ring. */
    public static int txRing(int pair) {
        return 2 * pair + 1;
    }

    /**
     * Ring {@code ring}'s driver queue: counters, callbacks, used-buffer checks. Buffers added to it directly
     * bypass the driver's slots; add a chain of your own with {@link #addChain} instead.
     */
    public DriverQueue queue(int ring) {
        return rings.get(ring).queue;
    }

    /** The eventfd the back-end got with SET_VRING_KICK for {@code ring}. */
    public EventFd kickFd(int ring) {
        return rings.get(ring).ring.kick().eventFd();
    }

    /** The eventfd the back-end got with SET_VRING_CALL for {@code ring}. */
    public EventFd callFd(int ring) {
        return rings.get(ring).ring.call().eventFd();
    }

    /** Sleeps on {@code ring}'s call eventfd, at most {@code timeoutNanos}, without touching the ring; true if signalled. */
    public boolean awaitCall(int ring, long timeoutNanos) throws InterruptedException {
        return rings.get(ring).ring.call().await(timeoutNanos);
    }

    /**
     * Adds a chain the caller built (descriptors anywhere, e.g. outside guest memory to test a device's
     * defences), taking one of the ring's slots like any buffer; no kick.
     *
     * @return false when the ring has no free slot
     */
    public boolean addChain(int ring, ScatterGather chain) {
        Ring r = rings.get(ring);
        if (r.freeCount == 0) {
            return false;
        }
        int slot = r.free[--r.freeCount];
        r.queue.add(chain, r.tokens[slot]);
        return true;
    }

    // ---- receive ----

    /** Posts a writable buffer in every free slot of the pair's receive ring (at most {@code max}); kicks when needed. */
    public int postRx(int pair, int max) {
        Ring r = rings.get(rxRing(pair));
        int added = 0;
        while (r.freeCount > 0 && added < max) {
            int slot = r.free[--r.freeCount];
            r.sg.clear().writable(gpa(r.slotOffset(slot)), r.slotSize);
            r.queue.add(r.sg, r.tokens[slot]);
            added++;
        }
        if (added > 0) {
            r.queue.kick();
        }
        return added;
    }

    /** {@link #postRx(int, int)} into every free slot. */
    public int postRx(int pair) {
        return postRx(pair, Integer.MAX_VALUE);
    }

    /** Receive buffers posted and not yet returned. */
    public int rxPosted(int pair) {
        return rings.get(rxRing(pair)).queue.inFlight();
    }

    /** {@link #receive(int, int, FrameHandler)} with no limit: every complete frame there is. */
    public int receive(int pair, FrameHandler handler) {
        return receive(pair, Integer.MAX_VALUE, handler);
    }

    /**
     * Reaps used receive buffers, handing each complete frame to {@code handler} (merged buffers are joined using
     * num_buffers from the first one's header), until {@code maxFrames} frames or no used buffer is left; a frame
     * whose buffers are not all used yet is completed by a later call. Returns the frames handed over.
     *
     * @throws MalformedReceiveException when the device returned a frame the driver cannot take
     */
    public int receive(int pair, int maxFrames, FrameHandler handler) {
        Ring r = rings.get(rxRing(pair));
        int frames = 0;
        Object token;
        while ((frames < maxFrames || r.numBuffers != 0) && (token = r.queue.pollUsed()) != null) {
            int slot = (Integer) token;
            long len = r.queue.lastUsedLength();
            long off = r.slotOffset(slot);
            r.free[r.freeCount++] = slot;
            if (r.numBuffers == 0) {
                if (len < NetFeatures.HDR_LEN) {
                    throw new MalformedReceiveException(r.index, "first buffer of a frame holds " + len
                            + " bytes, less than the header");
                }
                int numBuffers = Short.toUnsignedInt(memory.get(LE_SHORT, off + NetFeatures.HDR_NUM_BUFFERS));
                if (numBuffers < 1 || numBuffers > config.queueSize() || (!config.mergeable() && numBuffers != 1)) {
                    throw new MalformedReceiveException(r.index, "num_buffers " + numBuffers);
                }
                r.numBuffers = numBuffers;
                r.buffersDone = 0;
                r.assembled = 0;
            }
            if (r.assembled + len > r.staging.byteSize()) {
                throw new MalformedReceiveException(r.index, "frame longer than " + r.staging.byteSize() + " bytes");
            }
            MemorySegment.copy(memory, off, r.staging, r.assembled, len);
            r.assembled += len;
            r.usedLengths[r.buffersDone++] = (int) len;
            if (r.buffersDone == r.numBuffers) {
                int n = r.numBuffers;
                r.numBuffers = 0;
                handler.frame(r.staging, r.assembled, n);
                frames++;
            }
        }
        return frames;
    }

    /** During a {@link FrameHandler} call for {@code pair}: the used length of the frame's buffer {@code i}. */
    public int usedLength(int pair, int i) {
        return rings.get(rxRing(pair)).usedLengths[i];
    }

    /**
     * Waits for used buffers on the pair's receive ring, at most {@code timeoutNanos}: arms the notification,
     * re-checks the ring (a buffer used meanwhile returns at once), sleeps on the call eventfd, disarms. Without
     * eventfds it polls the ring.
     *
     * @return true when there may be used buffers to reap
     */
    public boolean awaitRx(int pair, long timeoutNanos) throws InterruptedException {
        return rings.get(rxRing(pair)).ring.await(timeoutNanos);
    }

    // ---- transmit ----

    /**
     * Puts a frame on the pair's transmit ring after a zero virtio_net_hdr, copied from {@code frame}, in one
     * descriptor or two ({@link Config#txSegments()}); no kick.
     *
     * @return false when the ring has no free slot (reclaim with {@link #reapTx})
     */
    public boolean send(int pair, MemorySegment frame, long offset, int length) {
        Ring t = rings.get(txRing(pair));
        int frameOffset = config.txSegments() == 1 ? NetFeatures.HDR_LEN : SPLIT_FRAME_OFFSET;
        if (length < 0 || length > TX_SLOT - frameOffset) {
            throw new IllegalArgumentException("a frame of " + length + " bytes does not fit a transmit slot");
        }
        if (t.freeCount == 0) {
            return false;
        }
        int slot = t.free[--t.freeCount];
        long off = t.slotOffset(slot);
        memory.set(ValueLayout.JAVA_LONG_UNALIGNED, off, 0L); // the 12-byte header: no offloads, num_buffers 0
        memory.set(ValueLayout.JAVA_INT_UNALIGNED, off + 8, 0);
        MemorySegment.copy(frame, offset, memory, off + frameOffset, length);
        t.sg.clear();
        if (config.txSegments() == 1) {
            t.sg.readable(gpa(off), NetFeatures.HDR_LEN + length);
        } else {
            t.sg.readable(gpa(off), NetFeatures.HDR_LEN).readable(gpa(off + frameOffset), length);
        }
        t.queue.add(t.sg, t.tokens[slot]);
        return true;
    }

    /** Kicks the pair's transmit ring if the device asked for it. */
    public void kickTx(int pair) {
        rings.get(txRing(pair)).queue.kick();
    }

    /** Reclaims transmit slots the device is done with; returns how many. */
    public int reapTx(int pair) {
        return rings.get(txRing(pair)).reap();
    }

    /** Transmit buffers added and not yet reclaimed. */
    public int txInFlight(int pair) {
        return rings.get(txRing(pair)).queue.inFlight();
    }

    /** Free transmit slots. */
    public int txFree(int pair) {
        return rings.get(txRing(pair)).freeCount;
    }

    /** Waits for used buffers on the pair's transmit ring, like {@link #awaitRx}. */
    public boolean awaitTx(int pair, long timeoutNanos) throws InterruptedException {
        return rings.get(txRing(pair)).ring.await(timeoutNanos);
    }

    /** Closes the session (the connection, so the back-end stops its rings; the eventfds; guest memory). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            session.close();
        } finally {
            arena.close();
        }
    }
}
