package io.virtio4j.vhost.backend;

import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.vhost.protocol.ConfigPayload;
import io.virtio4j.vhost.protocol.InflightDescription;
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
    private final VirtioDevice device;
    private final long offeredFeatures;
    private final long offeredProtocolFeatures;
    private final MemoryMapper memory;
    private final VringTable vrings;

    private long features;
    private boolean featuresSet;
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
        this.offeredProtocolFeatures = ProtocolFeatures.SESSION | declared;
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
                default -> throw new VhostUserProtocolException(name, "request", m.request(),
                        "not supported by this back-end (its protocol feature is not offered)");
            }
            return null;
        } finally {
            m.closeUntakenFds();
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
        vrings.features(request, f);
        features = f;
        featuresSet = true;
        device.featuresNegotiated(f & ~bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES));
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
    }

    private U64 getQueueNum(String request) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.MQ);
        return new U64(device.reportedQueueCount());
    }

    // ---- memory ----

    private void setMemTable(Message m, MemoryTableDescription table) throws VhostUserProtocolException {
        try (MemoryMapper.Change c = memory.mapTable(m, table)) {
            vrings.swapMemory(c);
        }
    }

    private U64 getMaxMemSlots(String request) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.CONFIGURE_MEM_SLOTS);
        return new U64(memory.maxMemSlots());
    }

    private void addMemReg(Message m, SingleMemoryRegion region) throws VhostUserProtocolException {
        require(m.name(), ProtocolFeatures.CONFIGURE_MEM_SLOTS);
        try (MemoryMapper.Change c = memory.mapAdded(m, region.region())) {
            vrings.swapMemory(c);
        }
    }

    private void remMemReg(String request, SingleMemoryRegion region) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.CONFIGURE_MEM_SLOTS);
        try (MemoryMapper.Change c = memory.removal(request, region.region())) {
            vrings.swapMemory(c);
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

    private void setStatus(String request, U64 payload) throws VhostUserProtocolException {
        require(request, ProtocolFeatures.STATUS);
        status = payload.value() & 0xFF;
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
        status = 0;
    }

    /**
     * Stops every ring, closes every fd and unmaps all memory and the inflight area, the last two through the
     * device: the connection is gone, but a device thread that did not give its ring back may still read and write
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
                device.retire(memory.release());
            } finally {
                // a ring that failed to stop still holds its slice: the area is then never unmapped (a leak, not a
                // store into memory that is someone else's)
                vrings.inflight(null);
            }
        }
    }
}
