package io.virtio4j.vhost.backend;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.vhost.events.FeaturesNegotiated;
import io.virtio4j.vhost.events.LogBaseSet;
import io.virtio4j.vhost.protocol.ConfigPayload;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.LogDescription;
import io.virtio4j.vhost.protocol.MemoryTableDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.SingleMemoryRegion;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import io.virtio4j.vhost.protocol.VringAddress;
import io.virtio4j.vhost.protocol.VringFd;
import io.virtio4j.vhost.protocol.VringState;

import java.lang.foreign.MemorySegment;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;

/**
 * The back-end's side of one front-end connection: decodes each request into its payload record and hands it
 * to the one handler of that request. Negotiation (features, protocol features, status) is kept here; memory
 * belongs to the {@link MemoryMapper}, rings to the {@link VringTable}, everything device-specific to the
 * {@link VirtioDevice}. The connection reads and validates framing, hands each {@link Message} here, and sends
 * what {@link #handle} returns. Everything in a message is hostile: each check names the request, field and
 * value in a {@link VhostUserProtocolException}; state is left consistent and the connection decides whether
 * to answer with an error or to close.
 *
 * <p>Used by the connection's control thread only; devices run their queues on their own threads.
 */
public final class VhostUserSession implements AutoCloseable {
    /** Device status bit: feature negotiation is complete (virtio 1.x 2.1). */
    static final long STATUS_FEATURES_OK = 0x8;

    private final VirtioDevice device;
    private final long offeredFeatures;
    private final long offeredProtocolFeatures;
    private final MemoryMapper memory;
    private final VringTable vrings;

    private long features;
    private boolean featuresSet;
    /** The last SET_FEATURES was refused (DPDK's VIRTIO_DEV_FEATURES_FAILED): FEATURES_OK is not kept. */
    private boolean featuresRefused;
    private long protocolFeatures;
    private long status;
    /** The descriptor to send with the reply {@link #handle} just returned, or null (see {@link #takeReplyFd}). */
    private FileDescriptor replyFd;

    /** @throws IllegalArgumentException when the device declares protocol features the session cannot serve */
    public VhostUserSession(VirtioDevice device, BackendOptions options) {
        long declared = device.protocolFeatures();
        if ((declared & ~ProtocolFeatures.DEVICE_DECLARABLE) != 0) {
            throw new IllegalArgumentException("device declares protocol features 0x"
                    + Long.toHexString(declared & ~ProtocolFeatures.DEVICE_DECLARABLE)
                    + " that the session does not serve; a device may declare 0x"
                    + Long.toHexString(ProtocolFeatures.DEVICE_DECLARABLE));
        }
        this.device = device;
        this.offeredFeatures = device.features() | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
        // Dirty logging is the device's to offer (VHOST_F_LOG_ALL among its features: it marks what it writes into
        // guest memory); the session then serves the log (LOG_SHMFD: SET_LOG_BASE with an fd), which QEMU requires
        // with LOG_ALL before it migrates.
        boolean logs = (device.features() & bit(ProtocolFeatures.VHOST_F_LOG_ALL)) != 0;
        this.offeredProtocolFeatures = ProtocolFeatures.SESSION | declared | (logs ? bit(ProtocolFeatures.LOG_SHMFD) : 0);
        this.memory = new MemoryMapper(options.maxMemSlots());
        this.vrings = new VringTable(device, options, memory);
    }

    public boolean replyAckNegotiated() {
        return (protocolFeatures & bit(ProtocolFeatures.REPLY_ACK)) != 0;
    }

    /**
     * Handles one request.
     *
     * @return the reply payload for requests that have one (native byte order), or null
     * @throws VhostUserProtocolException when the request breaks the protocol; state is left consistent
     */
    public byte[] handle(Message m) throws VhostUserProtocolException {
        try {
            Request r = Request.of(m.request());
            if (r == null) {
                // inside the try: the descriptors an unknown request carries are closed like any others
                throw new VhostUserProtocolException(m.name(), "request", Integer.toUnsignedLong(m.request()), "unknown request");
            }
            String name = m.name();
            checkFdCount(r, m);
            MemorySegment p = m.payload();
            switch (r) {
                case GET_FEATURES -> {
                    return getFeatures().encode();
                }
                case SET_FEATURES -> setFeatures(name, U64.decode(name, p));
                case SET_OWNER, RESET_OWNER -> {
                    // one front-end per connection: nothing to own; RESET_OWNER is deprecated
                }
                case GET_PROTOCOL_FEATURES -> {
                    return getProtocolFeatures().encode();
                }
                case SET_PROTOCOL_FEATURES -> setProtocolFeatures(name, U64.decode(name, p));
                case GET_QUEUE_NUM -> {
                    return getQueueNum(name).encode();
                }
                case SET_MEM_TABLE -> setMemTable(m, MemoryTableDescription.decode(name, p));
                case GET_MAX_MEM_SLOTS -> {
                    return getMaxMemSlots(name).encode();
                }
                case ADD_MEM_REG -> addMemReg(m, SingleMemoryRegion.decode(name, p));
                case REM_MEM_REG -> remMemReg(name, SingleMemoryRegion.decode(name, p));
                case SET_VRING_NUM -> vrings.setNum(name, VringState.decode(name, p));
                case SET_VRING_ADDR -> vrings.setAddr(name, VringAddress.decode(name, p));
                case SET_VRING_BASE -> vrings.setBase(name, VringState.decode(name, p));
                case GET_VRING_BASE -> {
                    return vrings.getBase(name, VringState.decode(name, p)).encode();
                }
                case SET_VRING_KICK -> vrings.setKick(m, VringFd.decode(name, p));
                case SET_VRING_CALL -> vrings.setCall(m, VringFd.decode(name, p));
                case SET_VRING_ERR -> vrings.setErr(m, VringFd.decode(name, p));
                case SET_VRING_ENABLE -> setVringEnable(name, VringState.decode(name, p));
                case GET_CONFIG -> {
                    return getConfig(name, ConfigPayload.decode(name, p)).encode();
                }
                case SET_CONFIG -> setConfig(name, ConfigPayload.decode(name, p));
                case SET_STATUS -> setStatus(name, U64.decode(name, p));
                case GET_STATUS -> {
                    return getStatus(name).encode();
                }
                case RESET_DEVICE -> resetDevice(name);
                case GET_INFLIGHT_FD -> {
                    return getInflightFd(name, InflightDescription.decode(name, p)).encode();
                }
                case SET_INFLIGHT_FD -> setInflightFd(m, InflightDescription.decode(name, p));
                case SET_LOG_BASE -> {
                    return setLogBase(m, LogDescription.decode(name, p)).encode();
                }
                case SET_LOG_FD -> {
                    // The eventfd the back-end would signal after each logged write: QEMU's vhost-user never sends
                    // it (its log is the shared memory of SET_LOG_BASE, which it reads at its own pace), and a
                    // signal per publication would cost a write(2) on the hot path. Accepted and closed (the
                    // finally below), so a front-end that sends it goes on.
                }
                default -> throw new VhostUserProtocolException(name, "request", m.request(),
                        "not supported by this back-end (its protocol feature is not offered)");
            }
            return null;
        } finally {
            m.closeUntakenFds();
        }
    }

    /**
     * More descriptors than the request may carry: refused like any other field, not as broken framing (the
     * descriptors travel beside the bytes, so the stream is still in step), so with REPLY_ACK the front-end gets a
     * failure naming {@code fds} and the connection goes on. Too few is the handler's to check, where it takes them.
     */
    private static void checkFdCount(Request r, Message m) throws VhostUserProtocolException {
        int allowed = switch (r.fds()) {
            case Request.Fds.PER_REGION -> Request.MAX_FDS;
            case Request.Fds.UNLESS_NOFD -> 1;
            default -> r.fds();
        };
        if (m.fdCount() > allowed) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(),
                    "at most " + allowed + " descriptor(s) may come with it");
        }
    }

    /**
     * The answer to a request that has a reply of its own ({@link Request#hasReply()}) and failed, in that reply's
     * format, or null when the format has no way to say "failed" (the connection then closes: a front-end waits for
     * the reply, and a made-up value would be taken for the truth). A REPLY_ACK is never the answer to such a
     * request: the front-end reads the reply in the request's own format (QEMU checks its size), and a u64 1
     * would be read as, say, one queue. Per request, as QEMU (the reader) and libvhost-user (a writer) have it:
     * <ul>
     * <li>GET_CONFIG: an empty payload, the protocol's error answer ("zero length of payload to indicate an
     *     error"; libvhost-user sets the size to 0; QEMU then fails the read on the size);</li>
     * <li>GET_INFLIGHT_FD: the inflight payload with {@code mmap_size} 0 and no descriptor, num_queues and
     *     queue_size as asked (what libvhost-user and DPDK answer when they cannot allocate the region; QEMU
     *     reads mmap_size 0 as "no inflight region" and goes on without inflight tracking);</li>
     * <li>GET_FEATURES, GET_PROTOCOL_FEATURES, GET_QUEUE_NUM, GET_MAX_MEM_SLOTS, GET_STATUS: a bare u64 whose
     *     every value means something: closed. Only hostile input makes them fail here (descriptors attached, the
     *     protocol feature not negotiated): QEMU asks none of them that way;</li>
     * <li>GET_VRING_BASE: closed. A made-up base would become the ring's resume point (QEMU stores it as
     *     last_avail_idx) and corrupt the ring; QEMU treats a missing reply as a disconnect and resets it from the
     *     used index;</li>
     * <li>anything else with a reply (not served here): closed.</li>
     * </ul>
     */
    public static byte[] failureReply(Message m) {
        Request r = Request.of(m.request());
        if (r == null || !r.hasReply()) {
            return null;
        }
        return switch (r) {
            case GET_CONFIG -> new byte[0];
            case GET_INFLIGHT_FD -> inflightFailure(m);
            default -> null;
        };
    }

    /**
     * The inflight payload with {@code mmap_size} 0 ("no area", {@link InflightDescription#noArea}), num_queues and
     * queue_size as asked when the question could be read.
     */
    private static byte[] inflightFailure(Message m) {
        try {
            InflightDescription asked = InflightDescription.decode(m.name(), m.payload());
            return InflightDescription.noArea(asked.numQueues(), asked.queueSize()).encode();
        } catch (VhostUserProtocolException e) {
            return InflightDescription.noArea(0, 0).encode(); // a question of the wrong size: nothing to echo
        }
    }

    private void require(String request, int feature) throws VhostUserProtocolException {
        if ((protocolFeatures & bit(feature)) == 0) {
            throw new VhostUserProtocolException(request, "protocol_features", protocolFeatures,
                    "needs protocol feature bit " + feature + ", which was not negotiated");
        }
    }

    // ---- features ----

    private U64 getFeatures() {
        return new U64(offeredFeatures);
    }

    private void setFeatures(String request, U64 payload) throws VhostUserProtocolException {
        featuresRefused = true; // until it is accepted
        long f = payload.value();
        long unknown = f & ~offeredFeatures;
        if (unknown != 0) {
            throw new VhostUserProtocolException(request, "features", f,
                    "bits 0x" + Long.toHexString(unknown) + " were not offered");
        }
        if (!VirtioFeatures.has(f, VirtioFeatures.VERSION_1)) {
            throw new VhostUserProtocolException(request, "features", f,
                    "VIRTIO_F_VERSION_1 is required: this back-end speaks virtio 1.x (little-endian rings) only");
        }
        boolean logOnly = featuresSet && (f ^ features) == bit(ProtocolFeatures.VHOST_F_LOG_ALL);
        boolean switchLogging = vrings.features(request, f);
        // Accepted: committed here as in the ring table before the rings restart, so that a ring that fails to
        // (refused, the whole message answered with its error) leaves both with the features the front-end set.
        features = f;
        featuresSet = true;
        featuresRefused = false;
        FeaturesNegotiated.emit(request, offeredFeatures, f, offeredProtocolFeatures, protocolFeatures);
        if (!logOnly) {
            // LOG_ALL alone toggled (a migration's start or end) is the back-end's business: the device's negotiation
            // has not changed, and telling it again would reset what follows from it (blk's cache mode)
            device.featuresNegotiated(f & ~bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES));
        }
        if (switchLogging) {
            vrings.switchLogging(request);
        }
        if ((f & bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES)) == 0) {
            vrings.enableAll();
        }
    }

    private U64 getProtocolFeatures() {
        return new U64(offeredProtocolFeatures);
    }

    private void setProtocolFeatures(String request, U64 payload) throws VhostUserProtocolException {
        long f = payload.value();
        long unknown = f & ~offeredProtocolFeatures;
        if (unknown != 0) {
            throw new VhostUserProtocolException(request, "protocol_features", f,
                    "bits 0x" + Long.toHexString(unknown) + " were not offered");
        }
        protocolFeatures = f;
        FeaturesNegotiated.emit(request, offeredFeatures, features, offeredProtocolFeatures, f);
    }

    private U64 getQueueNum(String request) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.MQ);
        return new U64(device.reportedQueueCount());
    }

    // ---- memory ----

    private void setMemTable(Message m, MemoryTableDescription table) throws VhostUserProtocolException {
        try (MemoryMapper.Change c = memory.mapTable(m, table)) {
            vrings.swapMemory(m.name(), c);
        }
    }

    private U64 getMaxMemSlots(String request) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.CONFIGURE_MEM_SLOTS);
        return new U64(memory.maxMemSlots());
    }

    private void addMemReg(Message m, SingleMemoryRegion region) throws VhostUserProtocolException {
        require(m.name(), ProtocolFeatures.CONFIGURE_MEM_SLOTS);
        try (MemoryMapper.Change c = memory.mapAdded(m, region.region())) {
            vrings.swapMemory(m.name(), c);
        }
    }

    private void remMemReg(String request, SingleMemoryRegion region) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.CONFIGURE_MEM_SLOTS);
        try (MemoryMapper.Change c = memory.removal(request, region.region())) {
            vrings.swapMemory(request, c);
        }
    }

    // ---- rings: the vring table handles them, SET_VRING_ENABLE after a negotiation check ----

    private void setVringEnable(String request, VringState s) throws VhostUserProtocolException {
        if ((features & bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES)) == 0 && featuresSet) {
            throw new VhostUserProtocolException(request, "features", features,
                    "SET_VRING_ENABLE needs VHOST_USER_F_PROTOCOL_FEATURES negotiated");
        }
        vrings.setEnable(request, s);
    }

    /**
     * The descriptor that goes with the reply {@link #handle} returned last (GET_INFLIGHT_FD's area), or null; the
     * caller sends it and closes it.
     */
    public FileDescriptor takeReplyFd() {
        FileDescriptor fd = replyFd;
        replyFd = null;
        return fd;
    }

    // ---- inflight tracking (INFLIGHT_SHMFD): the area itself is the vring table's ----

    /**
     * A fresh area for the queues asked for, in the format of the features negotiated so far (QEMU sends
     * SET_FEATURES first), which the rings record in from their next start, as libvhost-user does; the reply
     * carries its fd.
     */
    private InflightDescription getInflightFd(String request, InflightDescription asked) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.INFLIGHT_SHMFD);
        InflightArea.Allocated a = InflightArea.allocate(request, asked, vrings.format(), device.maxQueues(),
                device.maxQueueSize());
        vrings.inflight(a.area());
        replyFd = a.fd();
        return new InflightDescription(a.area().byteSize(), 0, asked.numQueues(), asked.queueSize());
    }

    /** The area the front-end kept (from this back-end or an earlier one) is the one rings record in from now on. */
    private void setInflightFd(Message m, InflightDescription given) throws VhostUserProtocolException {
        require(m.name(), ProtocolFeatures.INFLIGHT_SHMFD);
        if (m.fdCount() != 1) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(), "exactly one descriptor must come with it");
        }
        vrings.inflight(InflightArea.map(m.name(), given, m.takeFd(0), vrings.format(), device.maxQueues(),
                device.maxQueueSize()));
    }

    // ---- dirty logging (LOG_SHMFD): the log is the vring table's, rings log in it while LOG_ALL is negotiated ----

    /**
     * Maps the front-end's log; rings that log restart over it. The reply is a u64 0 (libvhost-user's and DPDK's; QEMU
     * checks that a u64 comes and ignores its value). A refused log is answered with no reply (the connection
     * closes, see {@link #failureReply}): a value QEMU ignores cannot say "failed", and a front-end that believes
     * the back-end logs would migrate a guest whose pages it does not know are dirty.
     */
    private U64 setLogBase(Message m, LogDescription given) throws VhostUserProtocolException {
        require(m.name(), ProtocolFeatures.LOG_SHMFD);
        if (m.fdCount() != 1) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(), "exactly one descriptor (the log) must come with it");
        }
        DirtyLogArea log = DirtyLogArea.map(m.name(), given, m.takeFd(0));
        // before the rings restart over it: a ring that fails to leaves the log mapped all the same
        LogBaseSet.emit(given.mmapSize(), given.mmapOffset(), VirtioFeatures.has(features, ProtocolFeatures.VHOST_F_LOG_ALL));
        vrings.log(m.name(), log);
        return new U64(0);
    }

    // ---- config, status, reset ----

    private ConfigPayload getConfig(String request, ConfigPayload asked) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.CONFIG);
        byte[] config = device.config();
        byte[] data = new byte[asked.data().length];
        for (int i = 0; i < data.length; i++) {
            // bytes past the device's config space read as zero, as config space beyond its fields does
            long at = asked.offset() + i;
            data[i] = at < config.length ? config[(int) at] : 0;
        }
        return new ConfigPayload(asked.offset(), asked.flags(), data);
    }

    private void setConfig(String request, ConfigPayload write) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.CONFIG);
        try {
            device.setConfig(write.offset(), write.data(), write.flags());
        } catch (ConfigWriteRefusedException e) {
            throw new VhostUserProtocolException(request, "offset", write.offset(), e.getMessage(), e);
        }
    }

    /**
     * The driver's status byte (virtio 1.x 2.1), kept for GET_STATUS, with two rules of the device's:
     * <ul>
     * <li>FEATURES_OK is kept only when the features are acceptable: a SET_FEATURES was accepted since the last
     *     reset (status 0, RESET_DEVICE) and the last one was not refused. Otherwise the bit is cleared, and a
     *     driver that reads the status back (virtio's step 6; DPDK-style front-ends) sees the refusal, as DPDK's
     *     back-end has it. QEMU (7.2) does not read it back: after a SET_FEATURES that returned 0 it does GET_STATUS,
     *     and SET_STATUS with FEATURES_OK added unless it is set already. It sends SET_FEATURES without NEED_REPLY
     *     (unless LOG_ALL), so a refusal there closes the connection and never reaches this rule; and it sends
     *     SET_FEATURES on every start, so clearing the acceptance on status 0 costs it nothing.</li>
     * <li>0 resets the device: every ring stops and the device's queues return to their initial state, as after
     *     RESET_DEVICE, so nothing is processed or notified until the driver sets the device up again. Unlike
     *     RESET_DEVICE, what the front-end told of each ring stays (see {@link VringTable#stopForReset}) and the
     *     configuration the driver wrote too: QEMU writes 0 also when the VM merely stops, with the guest's driver
     *     not reset, and older QEMU before GET_VRING_BASE, whose answer must then still be where the ring
     *     stopped.</li>
     * </ul>
     */
    private void setStatus(String request, U64 payload) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.STATUS);
        long s = payload.value();
        if (s > 0xFF) {
            throw new VhostUserProtocolException(request, "status", s, "the device status is one byte");
        }
        if (s == 0) {
            vrings.stopForReset();
            device.reset();
            // A reset clears the negotiation (virtio 3.1.1): FEATURES_OK needs a SET_FEATURES again. The features
            // value stays: the stopped rings' state, which GET_VRING_BASE still reports, was made under it.
            featuresSet = false;
            featuresRefused = false;
            status = 0;
            return;
        }
        if ((s & STATUS_FEATURES_OK) != 0 && (!featuresSet || featuresRefused)) {
            s &= ~STATUS_FEATURES_OK;
        }
        status = s;
    }

    private U64 getStatus(String request) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.STATUS);
        return new U64(status);
    }

    private void resetDevice(String request) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.RESET_DEVICE);
        vrings.reset();
        device.reset();
        device.resetConfig(); // the driver's reset, unlike a connection's end (close)
        features = 0;
        featuresSet = false;
        featuresRefused = false;
        status = 0;
    }

    /**
     * Stops every ring, closes every fd and unmaps all memory and the inflight area, the rings' call and error
     * eventfd numbers and the last two through the device: the connection is gone, but a device thread that did not give its ring back may still read and write
     * guest memory (or have the kernel do it), and an unmapped (or remapped) range under it would take its data to
     * someone else's memory. The inflight area's content stays in the front-end's fd, for the next back-end.
     */
    @Override
    public void close() {
        vrings.close();
        try {
            device.reset();
        } finally {
            try {
                // The eventfd numbers too: such a thread may still signal a ring's call or error eventfd, and a
                // closed number may be handed on (see EventFdSlot). One retire: one wait, one log.
                Runnable unmap = memory.release();
                Runnable closeEventFds = vrings.releaseEventFds();
                device.retire(() -> {
                    try {
                        unmap.run();
                    } finally {
                        closeEventFds.run();
                    }
                });
            } finally {
                // a ring that failed to stop still holds its slice: the area is then never unmapped (a leak, not a
                // store into memory that is someone else's)
                vrings.inflight(null);
                vrings.dropLog();
            }
        }
    }
}
