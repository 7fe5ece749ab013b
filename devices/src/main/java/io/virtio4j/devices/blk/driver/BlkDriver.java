package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.BlkConfig;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.vhost.frontend.DriverRing;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import io.virtio4j.vhost.frontend.NegotiationFailedException;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;

import static io.virtio4j.devices.blk.BlkLayout.bit;

/**
 * The JVM's client for any vhost-user-blk back-end (qemu-storage-daemon, SPDK, ours): a {@link FrontendSession}
 * with virtio-blk's requests on top.
 *
 * <p>Each queue has {@link #depth(int)} request slots. A slot owns, in guest memory, a data buffer of
 * {@link Config#maxRequestBytes()} bytes (page-aligned, so a back-end may do direct I/O on it) and a small area with
 * the request header, the DISCARD/WRITE_ZEROES segment and the status byte. A request is: {@link #acquire} a slot,
 * fill {@link #data} for a write, queue it ({@link #read}, {@link #write}, ...), {@link #kick}, then
 * {@link #complete} reaps it (waiting between with {@link #await}). Each queue is driven by one thread at a time,
 * and none of this allocates: chains are built in one reusable {@link ScatterGather} per queue, tokens are boxed
 * once, the data slices are made once.
 *
 * <p>The device is not trusted: a status byte other than OK, IOERR and UNSUPP (or none written) is an error naming
 * the slot and value; a used length past the request's writable bytes or a used id of a buffer not in flight break
 * the queue in the ring code ({@link DriverQueue}), which checks them for every driver; its configuration space is
 * checked before use.
 *
 * <p>Chain layout: header (16 bytes, readable), data (readable for a write, writable for a read or GET_ID; cut into
 * SIZE_MAX-sized descriptors when the device set SIZE_MAX, at most SEG_MAX of them), status (1 byte, writable);
 * DISCARD and WRITE_ZEROES carry one 16-byte segment instead of data. With INDIRECT_DESC negotiated each request takes
 * one ring descriptor (its table is carved per ring entry); without, {@code 2 + segments} descriptors, and the depth
 * is cut to what the ring holds.
 */
public final class BlkDriver implements AutoCloseable {
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Per-slot metadata: header at 0, segment at 16, status at 32; 64 bytes keep slots on separate cache lines. */
    private static final int META_BYTES = 64;
    private static final int META_SEGMENT = 16;
    private static final int META_STATUS = 32;
    /** What the status byte holds until the device writes it: not a valid status, so "not written" is caught. */
    private static final byte STATUS_UNWRITTEN = (byte) 0xFF;
    /**
     * Bytes of configuration space asked with GET_CONFIG: virtio_blk_config through write_zeroes_may_unmap and its
     * padding (virtio 1.1's 60 bytes). Not {@link BlkConfig#SIZE}: back-ends built on an older struct, such as
     * qemu-storage-daemon's, refuse a longer read (an empty answer), and no field past these is used.
     */
    static final int CONFIG_BYTES = 60;
    /** Slot states. */
    private static final byte FREE = 0;
    private static final byte ACQUIRED = 1;
    private static final byte IN_FLIGHT = 2;

    /**
     * What the driver negotiates and how it lays out its queues.
     *
     * @param queues          request queues driven (VIRTIO_BLK_F_MQ when more than one)
     * @param queueSize       entries per ring
     * @param depth           request slots per queue (at most {@code queueSize}; without indirect descriptors cut
     *                        to what the ring holds)
     * @param maxRequestBytes data bytes per request slot, a multiple of 512
     * @param format          split or packed rings
     * @param eventIdx        VIRTIO_F_EVENT_IDX, if offered
     * @param indirect        VIRTIO_F_INDIRECT_DESC, if offered
     * @param eventFds        kick and call through eventfds; false: NOFD, both sides poll
     */
    public record Config(int queues, int queueSize, int depth, int maxRequestBytes, RingFormat format,
                         boolean eventIdx, boolean indirect, boolean eventFds) {
        public Config {
            if (format == null) {
                throw new IllegalArgumentException("a ring format is required");
            }
            if (queues < 1 || queues > 0xFFFF || !format.isValidQueueSize(queueSize) || depth < 1 || depth > queueSize
                    || maxRequestBytes < BlkLayout.SECTOR || maxRequestBytes % BlkLayout.SECTOR != 0
                    || maxRequestBytes > (1 << 30)) {
                throw new IllegalArgumentException("bad blk driver config: " + queues + " queues of " + queueSize
                        + " entries, depth " + depth + ", " + maxRequestBytes + " bytes per request (a multiple of "
                        + BlkLayout.SECTOR + ", at most 1 GiB)");
            }
        }

        /** 1 queue of 256 entries, depth 32, 128 KiB per request, split rings, EVENT_IDX, indirect, eventfds. */
        public static Config defaults() {
            return new Config(1, 256, 32, 128 << 10, RingFormat.SPLIT, true, true, true);
        }

        public Config withQueues(int v) {
            return new Config(v, queueSize, depth, maxRequestBytes, format, eventIdx, indirect, eventFds);
        }

        public Config withQueueSize(int v) {
            return new Config(queues, v, depth, maxRequestBytes, format, eventIdx, indirect, eventFds);
        }

        public Config withDepth(int v) {
            return new Config(queues, queueSize, v, maxRequestBytes, format, eventIdx, indirect, eventFds);
        }

        public Config withMaxRequestBytes(int v) {
            return new Config(queues, queueSize, depth, v, format, eventIdx, indirect, eventFds);
        }

        public Config withFormat(RingFormat v) {
            return new Config(queues, queueSize, depth, maxRequestBytes, v, eventIdx, indirect, eventFds);
        }

        public Config withEventIdx(boolean v) {
            return new Config(queues, queueSize, depth, maxRequestBytes, format, v, indirect, eventFds);
        }

        public Config withIndirect(boolean v) {
            return new Config(queues, queueSize, depth, maxRequestBytes, format, eventIdx, v, eventFds);
        }

        public Config withEventFds(boolean v) {
            return new Config(queues, queueSize, depth, maxRequestBytes, format, eventIdx, indirect, v);
        }

        /** Virtio feature bits the driver would use (those offered are acked). */
        long wantedFeatures() {
            return requiredFeatures()
                    | (eventIdx ? VirtioFeatures.bit(VirtioFeatures.EVENT_IDX) : 0)
                    | (indirect ? VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) : 0)
                    | bit(BlkLayout.F_SIZE_MAX) | bit(BlkLayout.F_SEG_MAX) | bit(BlkLayout.F_BLK_SIZE)
                    | bit(BlkLayout.F_RO) | bit(BlkLayout.F_FLUSH) | bit(BlkLayout.F_TOPOLOGY)
                    | bit(BlkLayout.F_DISCARD) | bit(BlkLayout.F_WRITE_ZEROES);
        }

        /** Virtio feature bits the driver cannot do without. */
        long requiredFeatures() {
            return VirtioFeatures.bit(VirtioFeatures.VERSION_1)
                    | (format == RingFormat.PACKED ? VirtioFeatures.bit(VirtioFeatures.RING_PACKED) : 0)
                    | (queues > 1 ? bit(BlkLayout.F_MQ) : 0);
        }
    }

    /** Receives one completed request; the slot is free again once the call returns. */
    @FunctionalInterface
    public interface Completion {
        void completed(int slot, int status, long usedLength);
    }

    /** One request queue. */
    private static final class Queue {
        final int index;
        final DriverRing ring;
        final DriverQueue dq;
        final int depth;
        final MemorySegment meta;
        final long metaGpa;
        final MemorySegment[] data;
        final long[] dataGpa;
        final int[] free;
        int freeCount;
        final byte[] state;
        final Integer[] tokens;
        final ScatterGather sg;
        /** {@link #run}'s sink: the status of the slot it waits for. */
        final RunSink runSink = new RunSink();

        Queue(int index, DriverRing ring, int depth, MemorySegment meta, long metaGpa, MemorySegment[] data,
              long[] dataGpa, int maxElements) {
            this.index = index;
            this.ring = ring;
            this.dq = ring.queue();
            this.depth = depth;
            this.meta = meta;
            this.metaGpa = metaGpa;
            this.data = data;
            this.dataGpa = dataGpa;
            this.free = new int[depth];
            this.state = new byte[depth];
            this.tokens = new Integer[depth];
            for (int i = 0; i < depth; i++) {
                tokens[i] = i; // boxed once: tokens of requests in flight cost no allocation
                free[i] = depth - 1 - i;
            }
            this.freeCount = depth;
            this.sg = new ScatterGather(maxElements);
        }
    }

    /** Records the completion of one awaited slot. */
    private static final class RunSink implements Completion {
        int slot;
        int status;
        boolean done;

        @Override
        public void completed(int s, int st, long usedLength) {
            if (s == slot) {
                status = st;
                done = true;
            }
        }
    }

    private final Config config;
    private final FrontendSession session;
    private final BlkConfig deviceConfig;
    private final long features;
    private final int maxSegments;
    private final int segmentBytes;
    private final Queue[] queues;
    private boolean closed;

    private BlkDriver(Config config, FrontendSession session) {
        this.config = config;
        this.session = session;
        this.features = session.negotiate(config.wantedFeatures(), config.requiredFeatures(),
                FrontendSession.PROTOCOL_FEATURES, ProtocolFeatures.bit(ProtocolFeatures.CONFIG), config.queues());
        this.deviceConfig = BlkConfig.decode(session.getConfig(0, CONFIG_BYTES));
        validate(deviceConfig);
        // data segments: SIZE_MAX-sized pieces of the slot's contiguous buffer
        this.segmentBytes = has(BlkLayout.F_SIZE_MAX) && deviceConfig.sizeMax() > 0
                && deviceConfig.sizeMax() < config.maxRequestBytes()
                ? deviceConfig.sizeMax() : config.maxRequestBytes();
        this.maxSegments = (config.maxRequestBytes() + segmentBytes - 1) / segmentBytes;
        if (has(BlkLayout.F_SEG_MAX) && maxSegments > deviceConfig.segMax()) {
            throw new NegotiationFailedException("requests of " + config.maxRequestBytes() + " bytes: they take "
                    + maxSegments + " segments of SIZE_MAX " + segmentBytes + ", SEG_MAX is " + deviceConfig.segMax());
        }
        int maxElements = 2 + Math.max(1, maxSegments);
        boolean indirect = VirtioFeatures.has(features, VirtioFeatures.INDIRECT_DESC);
        int depth = indirect ? config.depth() : Math.min(config.depth(), config.queueSize() / maxElements);
        if (depth < 1) {
            throw new IllegalArgumentException("a request of " + maxElements + " descriptors does not fit a ring of "
                    + config.queueSize() + " without indirect descriptors");
        }
        int qs = config.queueSize();
        int indirectElements = indirect ? maxElements : 0;
        long slotBytes = GuestMemory.roundUp(config.maxRequestBytes(), GuestMemory.PAGE);
        long perQueue = FrontendSession.ringBytes(config.format(), qs, indirectElements)
                + GuestMemory.roundUp((long) depth * META_BYTES, GuestMemory.PAGE) + depth * slotBytes;
        GuestMemory memory = GuestMemory.create("virtio4j-blk-driver", perQueue * config.queues());
        session.attach(memory);
        this.queues = new Queue[config.queues()];
        for (int q = 0; q < config.queues(); q++) {
            // with indirect descriptors every request (2 or more elements) takes one ring descriptor
            DriverRing ring = session.addRing(config.format(), qs, indirectElements, DriverOptions.defaults(),
                    config.eventFds());
            MemorySegment meta = memory.carveSegment((long) depth * META_BYTES, GuestMemory.PAGE);
            MemorySegment[] data = new MemorySegment[depth];
            long[] dataGpa = new long[depth];
            for (int s = 0; s < depth; s++) {
                data[s] = memory.carveSegment(slotBytes, GuestMemory.PAGE).asSlice(0, config.maxRequestBytes());
                dataGpa[s] = memory.gpa(data[s]);
            }
            queues[q] = new Queue(q, ring, depth, meta, memory.gpa(meta), data, dataGpa, maxElements);
        }
        session.start();
    }

    private boolean has(int feature) {
        return (features & bit(feature)) != 0;
    }

    /** Checks the configuration fields this driver relies on, as far as their features were negotiated. */
    private void validate(BlkConfig c) {
        if (c.capacity() < 0 || c.capacity() > Long.MAX_VALUE >>> BlkLayout.SECTOR_SHIFT) {
            throw new BadDeviceConfigException("capacity", c.capacity(), "sectors, at most 2^54");
        }
        // size_max 0 means no limit: qemu-storage-daemon offers SIZE_MAX and leaves it 0
        if (has(BlkLayout.F_SIZE_MAX) && c.sizeMax() != 0 && Integer.toUnsignedLong(c.sizeMax()) < BlkLayout.SECTOR) {
            throw new BadDeviceConfigException("size_max", Integer.toUnsignedLong(c.sizeMax()), "0 or at least 512 bytes");
        }
        if (has(BlkLayout.F_SEG_MAX) && (c.segMax() < 1)) {
            throw new BadDeviceConfigException("seg_max", Integer.toUnsignedLong(c.segMax()), "1 to 2^31 - 1");
        }
        if (has(BlkLayout.F_BLK_SIZE) && (c.blkSize() < BlkLayout.SECTOR || c.blkSize() > (1 << 16)
                || Integer.bitCount(c.blkSize()) != 1)) {
            throw new BadDeviceConfigException("blk_size", Integer.toUnsignedLong(c.blkSize()),
                    "a power of two from 512 to 65536");
        }
        if (has(BlkLayout.F_MQ) && c.numQueues() < config.queues()) {
            throw new NegotiationFailedException(config.queues() + " queues: num_queues is " + c.numQueues());
        }
    }

    /**
     * Connects to the vhost-user-blk back-end at {@code socket} (waiting up to {@code patience} for it to listen),
     * negotiates, reads and checks its configuration, and starts every queue.
     *
     * @throws NegotiationFailedException when the back-end lacks a required feature or enough queues, or its
     *         SIZE_MAX and SEG_MAX do not allow {@link Config#maxRequestBytes()}
     * @throws BadDeviceConfigException   when its configuration space holds a value the driver cannot use
     */
    public static BlkDriver connect(Path socket, Config config, Duration patience) throws InterruptedException {
        return start(FrontendSession.connect(socket, patience), config);
    }

    /**
     * Listens at {@code socket} (QEMU's {@code server} chardev style) and drives the first vhost-user-blk back-end
     * that connects within {@code patience}; {@link #reconnect} accepts its next connection.
     */
    public static BlkDriver listen(Path socket, Config config, Duration patience) throws InterruptedException {
        return start(FrontendSession.listen(socket, patience), config);
    }

    /** {@link #connect} over a session already connected (or accepted): the driver owns it and closes it. */
    public static BlkDriver start(FrontendSession session, Config config) {
        try {
            return new BlkDriver(config, session);
        } catch (RuntimeException | Error e) {
            session.close();
            throw e;
        }
    }

    public Config config() {
        return config;
    }

    /** The session underneath: stop, reset, reconnect, raw requests. */
    public FrontendSession session() {
        return session;
    }

    /** The configuration space read with GET_CONFIG, checked. */
    public BlkConfig deviceConfig() {
        return deviceConfig;
    }

    /** Virtio feature bits acked (VHOST_USER_F_PROTOCOL_FEATURES included). */
    public long negotiatedFeatures() {
        return features;
    }

    /** Whether the device is read-only (VIRTIO_BLK_F_RO negotiated). */
    public boolean readOnly() {
        return has(BlkLayout.F_RO);
    }

    public long capacityBytes() {
        return deviceConfig.capacity() << BlkLayout.SECTOR_SHIFT;
    }

    /** Request slots of {@code queue}. */
    public int depth(int queue) {
        return q(queue).depth;
    }

    /** Data descriptors a request of the full {@link Config#maxRequestBytes()} takes. */
    public int maxSegments() {
        return maxSegments;
    }

    private Queue q(int queue) {
        return queues[queue];
    }

    // ---- requests: one thread per queue, allocation-free ----

    /** A free request slot of {@code queue} (0 .. depth - 1), now the caller's, or -1 when every slot is taken. */
    public int acquire(int queue) {
        Queue q = q(queue);
        if (q.freeCount == 0) {
            return -1;
        }
        int slot = q.free[--q.freeCount];
        q.state[slot] = ACQUIRED;
        return slot;
    }

    /** Gives back a slot acquired and not queued. */
    public void release(int queue, int slot) {
        Queue q = q(queue);
        requireAcquired(q, slot);
        q.state[slot] = FREE;
        q.free[q.freeCount++] = slot;
    }

    /** The slot's data buffer ({@link Config#maxRequestBytes()} bytes of guest memory); the same segment every time. */
    public MemorySegment data(int queue, int slot) {
        return q(queue).data[slot];
    }

    /** Queues a read of {@code bytes} (a multiple of 512, at most maxRequestBytes) from {@code sector} into the slot's data. */
    public void read(int queue, int slot, long sector, int bytes) {
        Queue q = q(queue);
        requireAcquired(q, slot);
        requireLength(bytes);
        header(q, slot, BlkLayout.T_IN, sector);
        q.sg.clear().readable(q.metaGpa + (long) slot * META_BYTES, BlkLayout.HEADER_BYTES);
        for (int at = 0; at < bytes; at += segmentBytes) {
            q.sg.writable(q.dataGpa[slot] + at, Math.min(segmentBytes, bytes - at));
        }
        submit(q, slot);
    }

    /** Queues a write of the first {@code bytes} of the slot's data to {@code sector}. */
    public void write(int queue, int slot, long sector, int bytes) {
        Queue q = q(queue);
        requireAcquired(q, slot);
        requireLength(bytes);
        requireWritable();
        header(q, slot, BlkLayout.T_OUT, sector);
        q.sg.clear().readable(q.metaGpa + (long) slot * META_BYTES, BlkLayout.HEADER_BYTES);
        for (int at = 0; at < bytes; at += segmentBytes) {
            q.sg.readable(q.dataGpa[slot] + at, Math.min(segmentBytes, bytes - at));
        }
        submit(q, slot);
    }

    /** Queues a FLUSH (the device answers UNSUPP without VIRTIO_BLK_F_FLUSH, which the driver asks for). */
    public void flush(int queue, int slot) {
        Queue q = q(queue);
        requireAcquired(q, slot);
        header(q, slot, BlkLayout.T_FLUSH, 0);
        q.sg.clear().readable(q.metaGpa + (long) slot * META_BYTES, BlkLayout.HEADER_BYTES);
        submit(q, slot);
    }

    /** Queues a GET_ID: the device's 20-byte id lands at the start of the slot's data. */
    public void getId(int queue, int slot) {
        Queue q = q(queue);
        requireAcquired(q, slot);
        header(q, slot, BlkLayout.T_GET_ID, 0);
        q.sg.clear().readable(q.metaGpa + (long) slot * META_BYTES, BlkLayout.HEADER_BYTES)
                .writable(q.dataGpa[slot], BlkLayout.ID_BYTES);
        submit(q, slot);
    }

    /**
     * Queues a DISCARD of one segment.
     *
     * @throws IllegalStateException when VIRTIO_BLK_F_DISCARD was not negotiated
     */
    public void discard(int queue, int slot, long sector, long sectors) {
        requireFeature(BlkLayout.F_DISCARD, "DISCARD");
        segmentRequest(queue, slot, BlkLayout.T_DISCARD, sector, sectors, 0);
    }

    /**
     * Queues a WRITE_ZEROES of one segment; {@code unmap} lets the device deallocate the range.
     *
     * @throws IllegalStateException when VIRTIO_BLK_F_WRITE_ZEROES was not negotiated
     */
    public void writeZeroes(int queue, int slot, long sector, long sectors, boolean unmap) {
        requireFeature(BlkLayout.F_WRITE_ZEROES, "WRITE_ZEROES");
        requireWritable();
        segmentRequest(queue, slot, BlkLayout.T_WRITE_ZEROES, sector, sectors, unmap ? BlkLayout.SEGMENT_FLAG_UNMAP : 0);
    }

    private void segmentRequest(int queue, int slot, int type, long sector, long sectors, int flags) {
        Queue q = q(queue);
        requireAcquired(q, slot);
        if (sector < 0 || sectors < 1 || sectors > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("segment of " + sectors + " sectors at " + sector
                    + ": 1 to 2^32 - 1 sectors at a non-negative sector");
        }
        header(q, slot, type, 0);
        long m = (long) slot * META_BYTES;
        q.meta.set(LE_LONG, m + META_SEGMENT + BlkLayout.SEGMENT_SECTOR, sector);
        q.meta.set(LE_INT, m + META_SEGMENT + BlkLayout.SEGMENT_NUM_SECTORS, (int) sectors);
        q.meta.set(LE_INT, m + META_SEGMENT + BlkLayout.SEGMENT_FLAGS, flags);
        q.sg.clear().readable(q.metaGpa + m, BlkLayout.HEADER_BYTES)
                .readable(q.metaGpa + m + META_SEGMENT, BlkLayout.SEGMENT_BYTES);
        submit(q, slot);
    }

    private static void header(Queue q, int slot, int type, long sector) {
        long m = (long) slot * META_BYTES;
        q.meta.set(LE_INT, m + BlkLayout.HEADER_TYPE, type);
        q.meta.set(LE_INT, m + BlkLayout.HEADER_RESERVED, 0);
        q.meta.set(LE_LONG, m + BlkLayout.HEADER_SECTOR, sector);
    }

    /** Appends the status descriptor, pre-sets the status byte and adds the chain; no kick. */
    private static void submit(Queue q, int slot) {
        long status = (long) slot * META_BYTES + META_STATUS;
        q.meta.set(ValueLayout.JAVA_BYTE, status, STATUS_UNWRITTEN);
        q.sg.writable(q.metaGpa + status, BlkLayout.STATUS_BYTES);
        q.dq.add(q.sg, q.tokens[slot]);
        q.state[slot] = IN_FLIGHT;
    }

    /**
     * Escape hatch for tests of a device's defences: adds {@code chain} (built by the caller, descriptors anywhere)
     * for an acquired slot; its completion reports the slot's status byte ({@link #statusAddress}). No kick.
     */
    public void addChain(int queue, int slot, ScatterGather chain) {
        Queue q = q(queue);
        requireAcquired(q, slot);
        q.meta.set(ValueLayout.JAVA_BYTE, (long) slot * META_BYTES + META_STATUS, STATUS_UNWRITTEN);
        q.dq.add(chain, q.tokens[slot]);
        q.state[slot] = IN_FLIGHT;
    }

    /** Guest-physical address of the slot's request header (16 bytes), for {@link #addChain}. */
    public long headerAddress(int queue, int slot) {
        return q(queue).metaGpa + (long) slot * META_BYTES;
    }

    /** Guest-physical address of the slot's status byte, for {@link #addChain}. */
    public long statusAddress(int queue, int slot) {
        return q(queue).metaGpa + (long) slot * META_BYTES + META_STATUS;
    }

    /** Guest-physical address of the slot's data buffer, for {@link #addChain}. */
    public long dataAddress(int queue, int slot) {
        return q(queue).dataGpa[slot];
    }

    /** Publishes the requests queued and notifies the device if it wants it. */
    public void kick(int queue) {
        q(queue).dq.kick();
    }

    /**
     * Reaps every completed request of {@code queue}, handing each to {@code sink}; its slot is free again once
     * the sink returns. Returns how many.
     *
     * @throws BadCompletionException when the device wrote an invalid status, or none (the slot is free again, and
     *         requests reaped before it were handed over)
     */
    public int complete(int queue, Completion sink) {
        Queue q = q(queue);
        int n = 0;
        Object token;
        while ((token = q.dq.pollUsed()) != null) {
            int slot = (Integer) token;
            long used = q.dq.lastUsedLength();
            int status = Byte.toUnsignedInt(q.meta.get(ValueLayout.JAVA_BYTE, (long) slot * META_BYTES + META_STATUS));
            q.state[slot] = FREE;
            if (status != BlkLayout.S_OK && status != BlkLayout.S_IOERR && status != BlkLayout.S_UNSUPP) {
                q.free[q.freeCount++] = slot;
                throw new BadCompletionException(queue, slot, "status", status, "OK 0, IOERR 1 or UNSUPP 2"
                        + (status == 0xFF ? "; the device did not write it" : ""));
            }
            try {
                sink.completed(slot, status, used);
            } finally {
                q.free[q.freeCount++] = slot;
            }
            n++;
        }
        return n;
    }

    /**
     * Waits for completions on {@code queue}, at most {@code timeoutNanos}: arms the used-buffer notification,
     * re-checks the ring, sleeps on the call eventfd (or polls without eventfds). True when there may be
     * completions to reap.
     */
    public boolean await(int queue, long timeoutNanos) throws InterruptedException {
        return q(queue).ring.await(timeoutNanos);
    }

    /** Requests of {@code queue} queued and not yet reaped. */
    public int inFlight(int queue) {
        return q(queue).dq.inFlight();
    }

    /**
     * Blocking convenience for tests and suites: kicks, waits for the request in {@code slot} (the only one in
     * flight on {@code queue}) and returns its status; the slot is free again.
     *
     * @throws RequestTimedOutException when it did not complete within {@code timeout} (it stays in flight)
     * @throws IllegalStateException    when the slot is not in flight or other requests are
     */
    public int run(int queue, int slot, Duration timeout) throws InterruptedException {
        Queue q = q(queue);
        if (slot < 0 || slot >= q.depth || q.state[slot] != IN_FLIGHT || q.dq.inFlight() != 1) {
            throw new IllegalStateException("run needs slot " + slot + " of queue " + queue
                    + " to be the one request in flight (" + q.dq.inFlight() + " are)");
        }
        kick(queue);
        RunSink s = q.runSink;
        s.slot = slot;
        s.done = false;
        long timeoutNanos = timeout.toNanos();
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            complete(queue, s);
            if (s.done) {
                return s.status;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new RequestTimedOutException(queue, slot, timeoutNanos);
            }
            await(queue, left);
        }
    }

    private void requireAcquired(Queue q, int slot) {
        if (slot < 0 || slot >= q.depth || q.state[slot] != ACQUIRED) {
            throw new IllegalStateException("slot " + slot + " of queue " + q.index + " is not acquired"
                    + (slot >= 0 && slot < q.depth ? " (" + (q.state[slot] == FREE ? "free" : "in flight") + ")" : ""));
        }
    }

    private void requireLength(int bytes) {
        if (bytes < BlkLayout.SECTOR || bytes > config.maxRequestBytes() || bytes % BlkLayout.SECTOR != 0) {
            throw new IllegalArgumentException("request of " + bytes + " bytes: a multiple of " + BlkLayout.SECTOR
                    + " up to " + config.maxRequestBytes());
        }
    }

    private void requireWritable() {
        if (readOnly()) {
            throw new IllegalStateException("the device is read-only (VIRTIO_BLK_F_RO)");
        }
    }

    private void requireFeature(int feature, String request) {
        if (!has(feature)) {
            throw new IllegalStateException(request + " needs feature bit " + feature + ", not negotiated");
        }
    }

    // ---- lifecycle ----

    /**
     * Orderly stop through the session: SET_STATUS(0), SET_VRING_ENABLE(0) and GET_VRING_BASE on every queue.
     * Requests the device had not completed stay in flight.
     */
    public void stop() {
        session.stop();
    }

    /** After the back-end went away: connects again and resumes (see {@link FrontendSession#reconnect}). */
    public void reconnect(Duration patience) throws InterruptedException {
        session.reconnect(patience);
    }

    /** Closes the session: the connection, eventfds and guest memory (requests in flight are dropped). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        session.close();
    }
}
