package io.virtio4j.vhost.frontend;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Poll;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.vhost.events.Reconnected;
import io.virtio4j.vhost.notify.EventFdNotifier;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;

/**
 * A vhost-user front-end session, what a VMM does for one device, for a driver in this JVM: connect to a back-end
 * (or accept one, as QEMU's {@code server} chardev does), negotiate virtio and protocol features, hand over guest
 * memory and rings, start, stop in order, reset, and reconnect after the back-end went away. A device driver
 * ({@code NetDriver}, {@code BlkDriver}) owns one and adds only its device's requests and buffers.
 * {@link VhostUserFrontend} stays the raw message layer underneath ({@link #frontend()}).
 *
 * <p>The order of messages is QEMU's (vhost-user.md 4.1): at {@link #negotiate} GET_FEATURES,
 * GET/SET_PROTOCOL_FEATURES, GET_QUEUE_NUM (MQ), SET_OWNER; at {@link #start} SET_FEATURES, SET_MEM_TABLE, for each
 * ring SET_VRING_NUM, _BASE, _ADDR, _KICK, _CALL, then SET_VRING_ENABLE(1) on each ring, then SET_STATUS(DRIVER_OK)
 * when STATUS was negotiated. With INFLIGHT_SHMFD (asked for whenever offered, unless {@link #useInflight} says
 * otherwise) {@link #start} sends GET_INFLIGHT_FD after SET_FEATURES the first time and SET_INFLIGHT_FD every time,
 * as QEMU's vhost-user-blk does, and keeps the area for {@link #reconnect}.
 *
 * <p>Used by one thread for set-up, stop, reset and reconnection, while no ring is driven; each ring is then
 * driven by one thread of the driver's choosing.
 */
public final class FrontendSession implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(FrontendSession.class.getName());
    /** Device status bits (virtio 1.x 2.1): ACKNOWLEDGE, DRIVER, FEATURES_OK, DRIVER_OK. */
    public static final int STATUS_DRIVER_OK = 0x1 | 0x2 | 0x8 | 0x4;
    /** Protocol features every driver asks for (each only if offered): what this session knows how to use. */
    public static final long PROTOCOL_FEATURES = bit(ProtocolFeatures.MQ) | bit(ProtocolFeatures.CONFIG)
            | bit(ProtocolFeatures.STATUS) | bit(ProtocolFeatures.CONFIGURE_MEM_SLOTS)
            | bit(ProtocolFeatures.RESET_DEVICE) | bit(ProtocolFeatures.REPLY_ACK)
            | bit(ProtocolFeatures.LOG_SHMFD); // for DirtyLogging

    private final Path path;
    private final UnixServerSocket server;
    private VhostUserFrontend frontend;
    private GuestMemory memory;
    private final List<DriverRing> rings = new ArrayList<>();
    private long features;
    private long protocolFeatures;
    private long wantedProtocolFeatures;
    private long requiredProtocolFeatures;
    private long queueNum = 1;
    private int requiredQueues = 1;
    private boolean closed;
    /** Whether INFLIGHT_SHMFD is asked for when offered ({@link #useInflight}). */
    private boolean inflightWanted = true;
    /** The back-end's inflight area, kept across reconnections until a reset or close; null before the first start. */
    private VhostUserFrontend.InflightArea inflight;

    private FrontendSession(VhostUserFrontend frontend, Path path, UnixServerSocket server) {
        this.frontend = frontend;
        this.path = path;
        this.server = server;
    }

    /** A session over an already connected front-end (an in-process back-end, a socket pair), which it then owns. */
    public static FrontendSession over(VhostUserFrontend frontend) {
        return new FrontendSession(frontend, null, null);
    }

    /**
     * Connects to the back-end listening at {@code path}, waiting up to {@code patience} for it to appear (see
     * {@link VhostUserFrontend#connect(Path, Duration)}) and for each of its replies
     * ({@link VhostUserFrontend#replyPatience(Duration)}); {@link #reconnect} connects there again.
     */
    public static FrontendSession connect(Path path, Duration patience) throws InterruptedException {
        VhostUserFrontend.requirePositive(patience);
        return new FrontendSession(patient(VhostUserFrontend.connect(path, patience), patience), path, null);
    }

    private static VhostUserFrontend patient(VhostUserFrontend frontend, Duration patience) {
        frontend.replyPatience(patience);
        return frontend;
    }

    /**
     * Listens at {@code path} (a file must not exist there) and accepts one back-end, waiting up to
     * {@code patience} for it and for each of its replies; the socket keeps listening, so {@link #reconnect} accepts
     * the back-end's next connection.
     *
     * @throws BackendTimeoutException when no back-end connected in time
     */
    public static FrontendSession listen(Path path, Duration patience) throws InterruptedException {
        VhostUserFrontend.requirePositive(patience);
        UnixServerSocket server = UnixServerSocket.listen(path, 1);
        try {
            return new FrontendSession(patient(VhostUserFrontend.over(accept(server, patience)), patience), path, server);
        } catch (RuntimeException | Error | InterruptedException e) {
            server.close();
            throw e;
        }
    }

    private static UnixSocket accept(UnixServerSocket server, Duration patience) throws InterruptedException {
        Poll poll = new Poll(server.fileDescriptor(), Poll.POLLIN);
        long deadline = System.nanoTime() + patience.toNanos();
        while (true) {
            if (Thread.interrupted()) {
                throw new InterruptedException("waiting for a back-end at " + server.path());
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new BackendTimeoutException("no back-end connected to " + server.path() + " within " + patience);
            }
            // a bounded wait, so an interrupt is seen within 100 ms
            if ((poll.await(Math.min(left, 100_000_000L)) & Poll.POLLIN) != 0) {
                return server.accept();
            }
        }
    }

    // ---- negotiation ----

    /**
     * Negotiates: GET_FEATURES, GET_PROTOCOL_FEATURES and SET_PROTOCOL_FEATURES, GET_QUEUE_NUM when MQ is
     * negotiated, SET_OWNER. The virtio features acked (sent at {@link #start}) are {@code wanted} as far as offered,
     * and VHOST_USER_F_PROTOCOL_FEATURES (bit 30), which is required.
     *
     * @param wanted           virtio feature bits the driver would use
     * @param required         those of them it cannot do without
     * @param wantedProtocol   protocol feature bits to ask for, as far as offered ({@link #PROTOCOL_FEATURES})
     * @param requiredProtocol those of them the driver cannot do without
     * @param queues           queues the driver needs, in the unit of GET_QUEUE_NUM (net: pairs); over 1 needs MQ
     * @return the virtio features acked
     * @throws NegotiationFailedException naming the missing bits or the queues the back-end lacks
     */
    public long negotiate(long wanted, long required, long wantedProtocol, long requiredProtocol, int queues) {
        long offered = frontend().getFeatures();
        long missing = (required | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES)) & ~offered;
        if (missing != 0) {
            throw new NegotiationFailedException("virtio feature bits", missing);
        }
        long pRequired = requiredProtocol | (queues > 1 ? bit(ProtocolFeatures.MQ) : 0);
        long pOffered = frontend.getProtocolFeatures();
        long pMissing = pRequired & ~pOffered;
        if (pMissing != 0) {
            throw new NegotiationFailedException("protocol feature bits", pMissing);
        }
        features = (wanted & offered) | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
        long asked = wantedProtocol | (inflightWanted ? bit(ProtocolFeatures.INFLIGHT_SHMFD) : 0);
        protocolFeatures = (asked | pRequired) & pOffered;
        wantedProtocolFeatures = asked;
        requiredProtocolFeatures = pRequired;
        requiredQueues = queues;
        frontend.setProtocolFeatures(protocolFeatures);
        queueNum = hasProtocol(ProtocolFeatures.MQ) ? frontend.getQueueNum() : 1;
        if (queueNum < queues) {
            throw new NegotiationFailedException(queues + " queues: the back-end has " + queueNum);
        }
        frontend.setOwner();
        return features;
    }

    /**
     * Whether to use the back-end's inflight area (INFLIGHT_SHMFD) when it offers one: on by default. Set before
     * {@link #negotiate}. Without it a {@link #reconnect} offers the buffers in flight again itself (split rings only).
     */
    public void useInflight(boolean use) {
        inflightWanted = use;
    }

    /** The inflight area the back-end handed out and this session keeps, or null (none negotiated, or not yet started). */
    public VhostUserFrontend.InflightArea inflightArea() {
        return inflight;
    }

    /** Virtio features acked (bit 30 included). */
    public long features() {
        return features;
    }

    /** Protocol features set with SET_PROTOCOL_FEATURES. */
    public long protocolFeatures() {
        return protocolFeatures;
    }

    public boolean hasProtocol(int protocolFeature) {
        return (protocolFeatures & bit(protocolFeature)) != 0;
    }

    /** Queues the back-end has (GET_QUEUE_NUM; 1 without MQ). */
    public long queueNum() {
        return queueNum;
    }

    /**
     * {@code size} bytes of the device's configuration space from {@code offset} (GET_CONFIG).
     *
     * @throws IllegalStateException when CONFIG was not negotiated
     */
    public byte[] getConfig(int offset, int size) {
        requireProtocol(ProtocolFeatures.CONFIG, "GET_CONFIG");
        return frontend().getConfig(offset, size);
    }

    /** Writes {@code data} into the device's configuration space at {@code offset} (SET_CONFIG). */
    public void setConfig(int offset, byte[] data) {
        requireProtocol(ProtocolFeatures.CONFIG, "SET_CONFIG");
        frontend().setConfig(offset, data);
    }

    private void requireProtocol(int feature, String request) {
        if (!hasProtocol(feature)) {
            throw new IllegalStateException(request + " needs protocol feature " + feature
                    + ", not negotiated (0x" + Long.toHexString(protocolFeatures) + ")");
        }
    }

    // ---- memory and rings ----

    /** Gives the session the guest memory its rings are carved from and the back-end gets at {@link #start}. */
    public void attach(GuestMemory guestMemory) {
        if (memory != null) {
            throw new IllegalStateException("guest memory is attached already");
        }
        memory = guestMemory;
    }

    public GuestMemory memory() {
        if (memory == null) {
            throw new IllegalStateException("no guest memory attached");
        }
        return memory;
    }

    /** Guest-memory bytes one ring of {@code format} and {@code size} takes (page-aligned). */
    public static long ringBytes(RingFormat format, int size) {
        return GuestMemory.roundUp(format.contiguousBytes(size), GuestMemory.PAGE);
    }

    /**
     * Carves the next ring (index {@link #rings()}.size()) from guest memory on its own pages, then, when
     * {@code indirectMaxElements} is positive and INDIRECT_DESC was negotiated, its indirect tables (one table of
     * {@code indirectMaxElements} descriptors per ring entry, used by every chain of 2 or more elements), and makes a
     * {@link DriverQueue} of {@code options} adjusted to the negotiated features, with kick and call eventfds.
     *
     * @param eventFds kick and call through eventfds; false: NOFD is sent, the back-end polls the ring and the
     *                 driver polls for used buffers
     */
    public DriverRing addRing(RingFormat format, int size, int indirectMaxElements, DriverOptions options,
                              boolean eventFds) {
        format.requireValidQueueSize(size);
        GuestMemory m = memory();
        RingAreas areas = format.carve(m.carveSegment(format.contiguousBytes(size), GuestMemory.PAGE), size);
        DriverOptions o = options;
        if (indirectMaxElements > 0 && VirtioFeatures.has(features, VirtioFeatures.INDIRECT_DESC)) {
            MemorySegment tables = m.carveSegment(DriverOptions.indirectTablesBytes(size, indirectMaxElements),
                    GuestMemory.PAGE);
            o = o.withIndirect(tables, m.gpa(tables), indirectMaxElements, 2);
        }
        EventFdNotifier kick = new EventFdNotifier();
        EventFdNotifier call;
        try {
            call = new EventFdNotifier();
        } catch (RuntimeException | Error e) {
            kick.close();
            throw e;
        }
        DriverRing r;
        try {
            r = new DriverRing(rings.size(), areas, DriverQueue.over(areas, o.forFeatures(features), kick), kick, call,
                    eventFds);
        } catch (RuntimeException | Error e) {
            kick.close();
            call.close();
            throw e;
        }
        rings.add(r);
        return r;
    }

    /** Guest-memory bytes {@link #addRing} carves for one ring with {@code indirectMaxElements} (page-aligned parts). */
    public static long ringBytes(RingFormat format, int size, int indirectMaxElements) {
        return ringBytes(format, size) + (indirectMaxElements > 0
                ? GuestMemory.roundUp(DriverOptions.indirectTablesBytes(size, indirectMaxElements), GuestMemory.PAGE) : 0);
    }

    public List<DriverRing> rings() {
        return List.copyOf(rings);
    }

    public DriverRing ring(int index) {
        return rings.get(index);
    }

    /**
     * The SET_VRING_BASE value of a ring that starts afresh: avail index 0 for split; for packed both positions 0
     * with both wrap counters 1 (vhost-user's packed encoding, as QEMU sends it).
     */
    public static long initialBase(RingFormat format) {
        return format == RingFormat.PACKED ? QueueState.INITIAL.toPackedBase() : 0;
    }

    // ---- start, stop, reset ----

    /**
     * Starts the device with every ring from its initial base: SET_FEATURES, SET_MEM_TABLE, each ring set up, each
     * enabled, then DRIVER_OK (see the class comment).
     */
    public void start() {
        start(initialBases(), true);
    }

    /** Every ring's {@link #initialBase}, indexed by ring. */
    public long[] initialBases() {
        long[] bases = new long[rings.size()];
        for (DriverRing r : rings) {
            bases[r.index()] = initialBase(r.areas().format());
        }
        return bases;
    }

    /** {@link #start()} with each ring resuming from {@code bases[ring]} (SET_VRING_BASE encoding). */
    public void start(long[] bases) {
        start(bases, true);
    }

    /**
     * {@link #start(long[])}, sending SET_VRING_ENABLE(1) to each ring only if {@code enableRings} (a driver that
     * enables its rings itself, or tests of a back-end's disabled rings).
     */
    public void start(long[] bases, boolean enableRings) {
        if (bases.length != rings.size()) {
            throw new IllegalArgumentException(bases.length + " bases for " + rings.size() + " rings");
        }
        VhostUserFrontend fe = frontend();
        fe.setFeatures(features);
        setUpInflight(fe);
        fe.setMemTable(List.of(memory().region()));
        for (DriverRing r : rings) {
            setUpRing(r.index(), bases[r.index()], false);
        }
        if (enableRings) {
            for (DriverRing r : rings) {
                fe.setVringEnable(r.index(), true);
            }
        }
        driverOk();
    }

    /**
     * With INFLIGHT_SHMFD negotiated: GET_INFLIGHT_FD for every ring the first time, then SET_INFLIGHT_FD with the
     * area kept, as QEMU's vhost-user-blk does at each start. An area has one queue size for all its regions; the
     * session asks with the largest of its rings, as QEMU asks with its queue-size property, and a smaller ring
     * records in the first entries of its region (the back-end takes rings up to the area's size). A back-end that
     * has no area to give (mmap_size 0 or no descriptor) leaves the rings untracked, as QEMU does: logged, nothing
     * set, a reconnection re-offers what was in flight itself ({@link #reconnect}), and the next start asks again.
     */
    private void setUpInflight(VhostUserFrontend fe) {
        if (!hasProtocol(ProtocolFeatures.INFLIGHT_SHMFD) || rings.isEmpty()) {
            return;
        }
        if (inflight == null) {
            int size = 0;
            for (DriverRing r : rings) {
                size = Math.max(size, r.queue().size());
            }
            inflight = fe.getInflightFd(rings.size(), size);
            if (inflight == null) {
                LOG.warning("the back-end has no inflight area for " + rings.size() + " rings of " + size
                        + " (GET_INFLIGHT_FD answered mmap_size 0 or no descriptor): the rings run untracked, a"
                        + " reconnection offers again what was in flight");
                return;
            }
        }
        fe.setInflightFd(inflight);
    }

    /** Closes the inflight area kept: the next start asks the back-end for a fresh one. */
    private void dropInflight() {
        if (inflight != null) {
            inflight.close();
            inflight = null;
        }
    }

    /**
     * SET_VRING_NUM, _BASE ({@code base}), _ADDR (front-end virtual addresses), _KICK, _CALL and, if
     * {@code enable}, _ENABLE(1) for ring {@code ring}: one ring's part of {@link #start}, for drivers and tests that
     * set rings up one by one.
     */
    public void setUpRing(int ring, long base, boolean enable) {
        DriverRing r = rings.get(ring);
        VhostUserFrontend fe = frontend();
        GuestMemory m = memory();
        fe.setVringNum(ring, r.queue().size());
        fe.setVringBase(ring, base);
        switch (r.areas()) {
            case SplitRingAreas a -> fe.setVringAddr(ring, m.user(a.descTable()), m.user(a.usedRing()), m.user(a.availRing()));
            // a packed ring's areas travel in the split fields: the device area as "used", the driver area as "avail"
            case PackedRingAreas a -> fe.setVringAddr(ring, m.user(a.descRing()), m.user(a.deviceEvent()), m.user(a.driverEvent()));
        }
        fe.setVringKick(ring, r.eventFds() ? r.kick().eventFd() : null);
        fe.setVringCall(ring, r.eventFds() ? r.call().eventFd() : null);
        if (enable) {
            fe.setVringEnable(ring, true);
        }
    }

    /**
     * Tells the back-end the driver is ready (SET_STATUS with DRIVER_OK) when STATUS was negotiated, as QEMU does
     * once the rings are set up: DPDK's back-end, for one, does not start a device before it sees DRIVER_OK.
     */
    public void driverOk() {
        if (hasProtocol(ProtocolFeatures.STATUS)) {
            frontend().setStatus(STATUS_DRIVER_OK);
        }
    }

    /**
     * Orderly stop, as QEMU stops a device: SET_STATUS(0) when STATUS was negotiated, SET_VRING_ENABLE(0) on every
     * ring, then GET_VRING_BASE on every ring, which stops it. Buffers the back-end had not returned stay in flight
     * on the driver side (take them back with {@link DriverQueue#detachUnused()} or resume with {@link #start(long[])}).
     *
     * @return each ring's base as the back-end answered (SET_VRING_BASE encoding), indexed by ring
     */
    public long[] stop() {
        VhostUserFrontend fe = frontend();
        if (hasProtocol(ProtocolFeatures.STATUS)) {
            fe.setStatus(0);
        }
        for (DriverRing r : rings) {
            fe.setVringEnable(r.index(), false);
        }
        long[] bases = new long[rings.size()];
        for (DriverRing r : rings) {
            bases[r.index()] = fe.getVringBase(r.index());
        }
        return bases;
    }

    /**
     * Resets the back-end's device: RESET_DEVICE when negotiated, else the orderly {@link #stop()}. The driver's
     * rings are the caller's to reset ({@link DriverQueue#detachUnused()}, {@link DriverQueue#reset()}) before
     * {@link #start()}. The inflight area goes, as QEMU drops it on a VM reset: nothing from before is in flight any
     * more, and the next start asks for a fresh one.
     */
    public void reset() {
        try {
            if (hasProtocol(ProtocolFeatures.RESET_DEVICE)) {
                frontend().resetDevice();
            } else {
                stop();
            }
        } finally {
            dropInflight();
        }
    }

    // ---- connection ----

    /**
     * After the back-end went away (or {@link #disconnect()}): connects again (or, listening, accepts its next
     * connection), negotiates the same features (the back-end must offer every one acked before, the protocol
     * features required before, and the queues) and starts again with the same memory, rings and eventfds.
     *
     * <p>Still connected, the session first stops the rings in order ({@link #stop()}; a back-end failing to answer,
     * or not answering within {@code patience}, is taken as gone), so the old back-end no longer touches them. Each split ring then resumes from the index in
     * its used ring, the count of requests the old back-end returned (not GET_VRING_BASE's answer, which also counts
     * requests it took and never returned), and every request still in flight that it did not return is offered
     * again ({@link DriverQueue#reofferInFlight()}: the old back-end may have completed them out of order, so the
     * avail entries from the used index on are rewritten with them). The new back-end processes them and returns
     * them with their original ids: nothing is lost. A request the old back-end took and completed, but whose used
     * entry it did not publish before it died, runs twice (as after QEMU reconnects a vhost-user-blk back-end
     * without inflight tracking, which is what removes that). Used buffers the driver had not reaped yet stay
     * reapable. Without an area packed rings are not resumed (their device position cannot be read back from the
     * ring): {@link UnsupportedOperationException}, before anything changes.
     *
     * <p>With an inflight area (INFLIGHT_SHMFD) the back-end itself knows what it took: the session hands the same
     * area to the new back-end and sets each ring's base as QEMU does ({@link DriverQueue#deviceResumeState()}: after
     * the used entries the old back-end published, for split and packed rings alike), the ring is not rewritten,
     * and the new back-end resubmits exactly the buffers its predecessor took and did not return (one it completed
     * but never published runs again on the device), and looks at the rings without waiting for a kick: the driver
     * gets every buffer back once.
     *
     * @param patience how long the old back-end may take to answer, the new one to appear, and each of its replies
     * @throws NegotiationFailedException when the new back-end offers less than was negotiated
     * @throws BackendTimeoutException    when no new back-end appeared, or it did not answer, within {@code patience}
     */
    public void reconnect(Duration patience) throws InterruptedException {
        VhostUserFrontend.requirePositive(patience);
        if (path == null) {
            throw new IllegalStateException("a session made over a connected front-end cannot reconnect");
        }
        long inFlight = 0;
        for (DriverRing r : rings) {
            inFlight += r.queue().inFlight();
        }
        Reconnected attempt = Reconnected.attempt(path, rings.size(), inflight != null);
        Throwable failure = null;
        try {
            reconnectOnce(patience);
        } catch (RuntimeException | Error | InterruptedException e) {
            failure = e;
            throw e;
        } finally {
            Reconnected.finish(attempt, inFlight, failure);
        }
    }

    private void reconnectOnce(Duration patience) throws InterruptedException {
        boolean tracked = inflight != null;
        for (DriverRing r : rings) {
            if (!tracked && r.areas().format() != RingFormat.SPLIT) { // refused before anything changes
                throw new UnsupportedOperationException("ring " + r.index() + " is packed: its position after a lost "
                        + "back-end is not recoverable from the ring; reconnection resumes split rings only");
            }
        }
        if (frontend != null) {
            try {
                frontend.replyPatience(patience);
                stop();
            } catch (VhostUserRequestFailedException | LinuxException | BackendTimeoutException e) {
                // the back-end is going away, or wedged: it stops its rings with the connection
            }
        }
        disconnect();
        long[] bases = new long[rings.size()];
        for (DriverRing r : rings) {
            if (tracked) {
                QueueState at = r.queue().deviceResumeState();
                bases[r.index()] = r.areas().format() == RingFormat.PACKED ? at.toPackedBase() : at.nextAvail();
            } else {
                bases[r.index()] = r.queue().reofferInFlight();
            }
        }
        frontend = patient(server != null ? VhostUserFrontend.over(accept(server, patience))
                : VhostUserFrontend.connect(path, patience), patience);
        long acked = features;
        long before = protocolFeatures;
        negotiate(acked, acked, wantedProtocolFeatures, requiredProtocolFeatures, requiredQueues);
        if (features != acked || protocolFeatures != before) {
            // features a driver set itself up for may not change under it
            throw new NegotiationFailedException("the features negotiated before (virtio 0x" + Long.toHexString(acked)
                    + ", protocol 0x" + Long.toHexString(before) + "; now 0x" + Long.toHexString(features) + ", 0x"
                    + Long.toHexString(protocolFeatures) + ")");
        }
        start(bases);
        if (tracked) {
            return; // the back-end resubmits from the area and looks at the rings once started, as after QEMU's restart
        }
        for (DriverRing r : rings) {
            if (r.queue().inFlight() > 0 && r.eventFds()) {
                r.kick().signal(); // buffers offered again: the new back-end may wait for a kick to look at them
            }
        }
    }

    /** Closes the vhost-user connection only (the back-end stops its rings); memory, rings and eventfds stay. */
    public void disconnect() {
        if (frontend != null) {
            frontend.close();
            frontend = null;
        }
    }

    public boolean connected() {
        return frontend != null;
    }

    /** The raw message layer, for requests of the caller's own. */
    public VhostUserFrontend frontend() {
        if (frontend == null) {
            throw new IllegalStateException("disconnected");
        }
        return frontend;
    }

    /** Closes the connection, the listening socket if any, every ring's eventfds and the guest memory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            disconnect();
        } finally {
            try {
                if (server != null) {
                    server.close();
                }
            } finally {
                dropInflight();
                for (DriverRing r : rings) {
                    r.closeFds();
                }
                if (memory != null) {
                    memory.close();
                }
            }
        }
    }
}
