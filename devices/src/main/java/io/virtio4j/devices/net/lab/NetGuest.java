package io.virtio4j.devices.net.lab;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.SplitDriverQueue;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.stats.QueueCounters;
import io.virtio4j.devices.net.NetFeatures;
import io.virtio4j.vhost.notify.EventFdNotifier;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * A virtio-net guest driven through our own vhost-user front-end, for tests and experiments: guest memory is one
 * memfd holding every ring and buffer pool, negotiated and handed to the back-end as one region.
 *
 * <p>Each ring is driven by one thread at a time (a receive ring and a transmit ring may be driven by two).
 * Receiving and transmitting allocate nothing: buffer slots are int stacks, tokens are preallocated, and a
 * received frame is copied into a per-ring staging segment that the handler reads.
 */
public final class NetGuest implements AutoCloseable {
    private static final long GPA_BASE = 0x1_0000_0000L;
    private static final long USER_BASE = 0x7f00_0000_0000L;
    private static final int PAGE = 4096;
    /** Bytes per transmit slot: the 12-byte header and a frame of up to 2036 bytes. */
    public static final int TX_SLOT = 2048;
    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** What the guest negotiates and how it lays out its buffers. */
    public record Config(int pairs, int queueSize, int rxBufferSize, boolean mergeable, boolean eventIdx) {
        public Config {
            if (!SplitLayout.isValidQueueSize(queueSize) || pairs < 1 || rxBufferSize < NetFeatures.HDR_LEN + 14) {
                throw new IllegalArgumentException("bad guest config " + pairs + "/" + queueSize + "/" + rxBufferSize);
            }
        }

        public static Config defaults() {
            return new Config(1, 256, 2048, true, true);
        }

        public Config withPairs(int p) {
            return new Config(p, queueSize, rxBufferSize, mergeable, eventIdx);
        }

        public Config withRxBuffers(int size, boolean merge) {
            return new Config(pairs, queueSize, size, merge, eventIdx);
        }

        long features() {
            return VirtioFeatures.bit(VirtioFeatures.VERSION_1)
                    | (eventIdx ? VirtioFeatures.bit(VirtioFeatures.EVENT_IDX) : 0)
                    | (mergeable ? VirtioFeatures.bit(NetFeatures.MRG_RXBUF) : 0)
                    | (pairs > 1 ? VirtioFeatures.bit(22 /* VIRTIO_NET_F_MQ */) : 0);
        }
    }

    /** Receives frames: {@code frame} holds the virtio_net_hdr then the Ethernet frame, {@code length} bytes in all. */
    @FunctionalInterface
    public interface FrameHandler {
        void frame(MemorySegment frame, long length, int numBuffers);
    }

    /** One ring as the guest drives it. */
    private final class Ring {
        final int index;
        final SplitRingAreas areas;
        final SplitDriverQueue queue;
        final EventFdNotifier kick = new EventFdNotifier();
        final EventFdNotifier call = new EventFdNotifier();
        final long pool;
        final int slotSize;
        final int[] free;
        int freeCount;
        final Integer[] tokens;
        final ScatterGather sg = new ScatterGather(1);
        /** Receive: a frame being assembled from several buffers. */
        MemorySegment staging;
        long assembled;
        int buffersLeft;
        int numBuffers;

        Ring(int index, long areaOffset, long pool, int slotSize) {
            this.index = index;
            this.areas = SplitRingAreas.carve(memory.asSlice(areaOffset, SplitRingAreas.contiguousBytes(config.queueSize())),
                    config.queueSize());
            this.pool = pool;
            this.slotSize = slotSize;
            this.queue = new SplitDriverQueue(areas, DriverOptions.defaults().forFeatures(features), kick);
            this.free = new int[config.queueSize()];
            this.tokens = new Integer[config.queueSize()];
            for (int i = 0; i < free.length; i++) {
                tokens[i] = i; // boxed once: tokens of buffers in flight cost no allocation
                free[freeCount++] = free.length - 1 - i;
            }
        }

        long slotOffset(int slot) {
            return pool + (long) slot * slotSize;
        }

        long user(MemorySegment s) {
            return USER_BASE + (s.address() - memory.address());
        }
    }

    private final Config config;
    private final long features;
    private final Arena arena = Arena.ofShared();
    private final FileDescriptor memfd;
    private final MemorySegment memory;
    private final List<Ring> rings = new ArrayList<>();
    private VhostUserFrontend frontend;

    private NetGuest(Config config) {
        this.config = config;
        this.features = config.features();
        int qs = config.queueSize();
        long ringBytes = SplitLayout.roundUp(SplitRingAreas.contiguousBytes(qs), PAGE);
        long rxPool = SplitLayout.roundUp((long) qs * config.rxBufferSize(), PAGE);
        long txPool = SplitLayout.roundUp((long) qs * TX_SLOT, PAGE);
        long staging = SplitLayout.roundUp(NetFeatures.HDR_LEN + 65536L, PAGE);
        int n = 2 * config.pairs();
        long size = n * ringBytes + config.pairs() * (rxPool + txPool + staging);
        FileDescriptor fd = Memfd.create("virtio4j-lab-guest", size);
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
            Ring r = new Ring(i, i * ringBytes, at, rx ? config.rxBufferSize() : TX_SLOT);
            at += rx ? rxPool : txPool;
            if (rx) {
                r.staging = memory.asSlice(at, NetFeatures.HDR_LEN + 65536L);
                at += staging;
            }
            rings.add(r);
        }
    }

    /**
     * Sets the guest up against the back-end behind {@code frontend} (which the guest then owns and closes):
     * features, protocol features (MQ, REPLY_ACK), owner, memory table and every ring, enabled.
     */
    public static NetGuest start(VhostUserFrontend frontend, Config config) {
        NetGuest g = new NetGuest(config);
        g.frontend = frontend;
        try {
            long offered = frontend.getFeatures();
            long want = g.features | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
            if ((want & ~offered) != 0) {
                throw new IllegalStateException("back-end does not offer feature bits 0x" + Long.toHexString(want & ~offered));
            }
            frontend.setFeatures(want);
            long pWant = ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.REPLY_ACK);
            long pOffered = frontend.getProtocolFeatures();
            frontend.setProtocolFeatures(pWant & pOffered);
            frontend.setOwner();
            frontend.setMemTable(List.of(new VhostUserFrontend.Region(GPA_BASE, g.memory.byteSize(), USER_BASE, 0, g.memfd)));
            for (Ring r : g.rings) {
                frontend.setVringNum(r.index, config.queueSize());
                frontend.setVringBase(r.index, 0);
                frontend.setVringAddr(r.index, r.user(r.areas.descTable()), r.user(r.areas.usedRing()),
                        r.user(r.areas.availRing()));
                frontend.setVringKick(r.index, r.kick.eventFd());
                frontend.setVringCall(r.index, r.call.eventFd());
                frontend.setVringEnable(r.index, true);
            }
            return g;
        } catch (RuntimeException | Error e) {
            g.close();
            throw e;
        }
    }

    public Config config() {
        return config;
    }

    private Ring rx(int pair) {
        return rings.get(2 * pair);
    }

    private Ring tx(int pair) {
        return rings.get(2 * pair + 1);
    }

    /** Driver-side counters of the pair's receive ring. */
    public QueueCounters rxCounters(int pair) {
        return rx(pair).queue.counters();
    }

    public QueueCounters txCounters(int pair) {
        return tx(pair).queue.counters();
    }

    // ---- receive ----

    /** Posts a writable buffer in every free slot of the pair's receive ring (at most {@code max}); kicks when needed. */
    public int postRx(int pair, int max) {
        Ring r = rx(pair);
        int added = 0;
        while (r.freeCount > 0 && added < max) {
            int slot = r.free[--r.freeCount];
            r.sg.clear().writable(GPA_BASE + r.slotOffset(slot), r.slotSize);
            r.queue.add(r.sg, r.tokens[slot]);
            added++;
        }
        if (added > 0) {
            r.queue.kick();
        }
        return added;
    }

    public int postRx(int pair) {
        return postRx(pair, Integer.MAX_VALUE);
    }

    /** Receive buffers posted and not yet returned. */
    public int rxPosted(int pair) {
        return rx(pair).queue.inFlight();
    }

    /**
     * Reaps every used receive buffer there is, handing each complete frame to {@code handler} (merged buffers are
     * joined using num_buffers from the first one's header). Returns the frames handed over.
     */
    public int receive(int pair, FrameHandler handler) {
        Ring r = rx(pair);
        int frames = 0;
        Object token;
        while ((token = r.queue.pollUsed()) != null) {
            int slot = (Integer) token;
            long len = r.queue.lastUsedLength();
            long off = r.slotOffset(slot);
            if (r.buffersLeft == 0) {
                if (len < NetFeatures.HDR_LEN) {
                    throw new IllegalStateException("ring " + r.index + ": first buffer of a frame holds " + len + " bytes");
                }
                r.numBuffers = Short.toUnsignedInt(memory.get(LE_SHORT, off + NetFeatures.HDR_NUM_BUFFERS));
                if (r.numBuffers < 1 || r.numBuffers > config.queueSize() || (!config.mergeable() && r.numBuffers != 1)) {
                    throw new IllegalStateException("ring " + r.index + ": num_buffers " + r.numBuffers);
                }
                r.buffersLeft = r.numBuffers;
                r.assembled = 0;
            }
            if (r.assembled + len > r.staging.byteSize()) {
                throw new IllegalStateException("ring " + r.index + ": frame longer than 64 KiB");
            }
            MemorySegment.copy(memory, off, r.staging, r.assembled, len);
            r.assembled += len;
            r.free[r.freeCount++] = slot;
            if (--r.buffersLeft == 0) {
                handler.frame(r.staging, r.assembled, r.numBuffers);
                frames++;
            }
        }
        return frames;
    }

    /**
     * Waits for a used-buffer notification on the pair's receive ring, at most {@code timeoutNanos}: arms it,
     * re-checks the ring (a buffer used meanwhile returns at once), sleeps on the call eventfd.
     *
     * @return true when there may be used buffers to reap
     */
    public boolean awaitRx(int pair, long timeoutNanos) throws InterruptedException {
        Ring r = rx(pair);
        if (r.queue.enableCallbacksOrFindPending()) {
            r.queue.disableCallbacks();
            return true;
        }
        boolean signalled = r.call.await(timeoutNanos);
        r.queue.disableCallbacks();
        return signalled;
    }

    // ---- transmit ----

    /**
     * Puts a frame on the pair's transmit ring after a zero virtio_net_hdr, copied from {@code frame}; no kick.
     *
     * @return false when the ring has no free slot (reap with {@link #reapTx})
     */
    public boolean send(int pair, MemorySegment frame, long offset, int length) {
        Ring t = tx(pair);
        if (length > TX_SLOT - NetFeatures.HDR_LEN) {
            throw new IllegalArgumentException("frame of " + length + " bytes does not fit a transmit slot");
        }
        if (t.freeCount == 0) {
            return false;
        }
        int slot = t.free[--t.freeCount];
        long off = t.slotOffset(slot);
        memory.asSlice(off, NetFeatures.HDR_LEN).fill((byte) 0);
        MemorySegment.copy(frame, offset, memory, off + NetFeatures.HDR_LEN, length);
        t.sg.clear().readable(GPA_BASE + off, NetFeatures.HDR_LEN + length);
        t.queue.add(t.sg, t.tokens[slot]);
        return true;
    }

    /** Kicks the pair's transmit ring if the device asked for it. */
    public void kickTx(int pair) {
        tx(pair).queue.kick();
    }

    /** Reclaims transmit slots the device is done with; returns how many. */
    public int reapTx(int pair) {
        Ring t = tx(pair);
        int n = 0;
        Object token;
        while ((token = t.queue.pollUsed()) != null) {
            t.free[t.freeCount++] = (Integer) token;
            n++;
        }
        return n;
    }

    /** Transmit buffers added and not yet reaped. */
    public int txInFlight(int pair) {
        return tx(pair).queue.inFlight();
    }

    /** Waits for a used-buffer notification on the transmit ring, like {@link #awaitRx}. */
    public boolean awaitTx(int pair, long timeoutNanos) throws InterruptedException {
        Ring t = tx(pair);
        if (t.queue.enableCallbacksOrFindPending()) {
            t.queue.disableCallbacks();
            return true;
        }
        boolean signalled = t.call.await(timeoutNanos);
        t.queue.disableCallbacks();
        return signalled;
    }

    /** Closes the vhost-user connection (the back-end stops its rings), then the guest's memory and eventfds. */
    @Override
    public void close() {
        try {
            if (frontend != null) {
                frontend.close();
                frontend = null;
            }
        } finally {
            for (Ring r : rings) {
                r.kick.close();
                r.call.close();
            }
            memfd.close();
            arena.close();
        }
    }
}
