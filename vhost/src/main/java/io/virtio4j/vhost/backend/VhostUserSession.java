package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.SplitDeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.memory.MemoryRegion;
import io.virtio4j.vhost.memory.MemoryTable;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;

/**
 * The back-end's state for one front-end connection and the handling of each request. Pure protocol logic:
 * the connection reads and validates framing, hands each {@link Message} here, and sends what
 * {@link #handle} returns. Everything in a message is hostile: each check names the request, field and value
 * in a {@link VhostUserProtocolException}; this object is left consistent and the connection decides whether
 * to answer with an error or to close.
 *
 * <p>Used by the connection's control thread only; devices run their queues on their own threads.
 */
public final class VhostUserSession implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(VhostUserSession.class.getName());

    private final VirtioDevice device;
    private final BackendOptions options;
    private final long offeredFeatures;
    private final Vring[] vrings;

    private long features;
    private boolean featuresSet;
    private long protocolFeatures;
    private long status;
    private MemoryTable memory = MemoryTable.empty();
    /** One arena per mapped region, so REM_MEM_REG can unmap one. */
    private final Map<MemoryRegion, Arena> regionArenas = new IdentityHashMap<>();

    public VhostUserSession(VirtioDevice device, BackendOptions options) {
        this.device = device;
        this.options = options;
        this.offeredFeatures = device.features() | bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
        this.vrings = new Vring[device.maxQueues()];
        for (int i = 0; i < vrings.length; i++) {
            vrings[i] = new Vring(i);
        }
    }

    public long negotiatedFeatures() {
        return features;
    }

    public long protocolFeatures() {
        return protocolFeatures;
    }

    public boolean replyAckNegotiated() {
        return (protocolFeatures & bit(ProtocolFeatures.REPLY_ACK)) != 0;
    }

    public MemoryTable memory() {
        return memory;
    }

    public boolean isStarted(int ring) {
        return vrings[ring].isStarted();
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
            return switch (r) {
                case GET_FEATURES -> u64(offeredFeatures);
                case SET_FEATURES -> setFeatures(m);
                case SET_OWNER, RESET_OWNER -> null;
                case GET_PROTOCOL_FEATURES -> u64(ProtocolFeatures.OFFERED);
                case SET_PROTOCOL_FEATURES -> setProtocolFeatures(m);
                case GET_QUEUE_NUM -> {
                    require(m, ProtocolFeatures.MQ);
                    yield u64(device instanceof QueuePairs qp ? qp.queuePairs() : vrings.length);
                }
                case SET_MEM_TABLE -> setMemTable(m);
                case GET_MAX_MEM_SLOTS -> {
                    require(m, ProtocolFeatures.CONFIGURE_MEM_SLOTS);
                    yield u64(options.maxMemSlots());
                }
                case ADD_MEM_REG -> {
                    require(m, ProtocolFeatures.CONFIGURE_MEM_SLOTS);
                    yield addMemReg(m);
                }
                case REM_MEM_REG -> {
                    require(m, ProtocolFeatures.CONFIGURE_MEM_SLOTS);
                    yield remMemReg(m);
                }
                case SET_VRING_NUM -> setVringNum(m);
                case SET_VRING_ADDR -> setVringAddr(m);
                case SET_VRING_BASE -> setVringBase(m);
                case GET_VRING_BASE -> getVringBase(m);
                case SET_VRING_KICK -> setVringKick(m);
                case SET_VRING_CALL -> setVringCall(m);
                case SET_VRING_ERR -> setVringErr(m);
                case SET_VRING_ENABLE -> setVringEnable(m);
                case GET_CONFIG -> {
                    require(m, ProtocolFeatures.CONFIG);
                    yield getConfig(m);
                }
                case SET_CONFIG -> {
                    require(m, ProtocolFeatures.CONFIG);
                    yield setConfig(m);
                }
                case SET_STATUS -> {
                    require(m, ProtocolFeatures.STATUS);
                    yield setStatus(m);
                }
                case GET_STATUS -> {
                    require(m, ProtocolFeatures.STATUS);
                    yield u64(status);
                }
                case RESET_DEVICE -> {
                    require(m, ProtocolFeatures.RESET_DEVICE);
                    yield resetDevice();
                }
                default -> throw new VhostUserProtocolException(m.name(), "request", m.request(),
                        "not supported by this back-end (its protocol feature is not offered)");
            };
        } finally {
            m.closeUntakenFds();
        }
    }

    /** Marker for devices whose GET_QUEUE_NUM answer counts queue pairs (virtio-net), not virtqueues. */
    public interface QueuePairs {
        int queuePairs();
    }

    private void require(Message m, int feature) throws VhostUserProtocolException {
        if ((protocolFeatures & bit(feature)) == 0) {
            throw new VhostUserProtocolException(m.name(), "protocol_features", protocolFeatures,
                    "needs protocol feature bit " + feature + ", which was not negotiated");
        }
    }

    private static byte[] u64(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(v).array();
    }

    // ---- features ----

    private byte[] setFeatures(Message m) throws VhostUserProtocolException {
        long f = m.u64(0);
        long unknown = f & ~offeredFeatures;
        if (unknown != 0) {
            throw new VhostUserProtocolException(m.name(), "features", f,
                    "bits 0x" + Long.toHexString(unknown) + " were not offered");
        }
        if (!VirtioFeatures.has(f, VirtioFeatures.VERSION_1)) {
            throw new VhostUserProtocolException(m.name(), "features", f,
                    "VIRTIO_F_VERSION_1 is required: this back-end speaks virtio 1.x (little-endian rings) only");
        }
        for (Vring v : vrings) {
            if (v.isStarted() && f != features) {
                throw new VhostUserProtocolException(m.name(), "features", f,
                        "ring " + v.index + " is started: features cannot change under it");
            }
        }
        features = f;
        featuresSet = true;
        device.featuresNegotiated(f & ~bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES));
        if ((f & bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES)) == 0) {
            // Without protocol features rings are enabled from the start (there is no SET_VRING_ENABLE).
            for (Vring v : vrings) {
                v.enabled = true;
            }
        }
        return null;
    }

    private byte[] setProtocolFeatures(Message m) throws VhostUserProtocolException {
        long f = m.u64(0);
        long unknown = f & ~ProtocolFeatures.OFFERED;
        if (unknown != 0) {
            throw new VhostUserProtocolException(m.name(), "protocol_features", f,
                    "bits 0x" + Long.toHexString(unknown) + " were not offered");
        }
        protocolFeatures = f;
        return null;
    }

    // ---- memory ----

    private byte[] setMemTable(Message m) throws VhostUserProtocolException {
        long n = Integer.toUnsignedLong(m.u32(0));
        if (n == 0 || n > Request.MAX_FDS) {
            throw new VhostUserProtocolException(m.name(), "nregions", n, "must be in [1, " + Request.MAX_FDS + "]");
        }
        if (m.size() != 8 + 32 * n) {
            throw new VhostUserProtocolException(m.name(), "size", m.size(), "must be 8 + 32 * nregions = " + (8 + 32 * n));
        }
        if (m.fdCount() != n) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(), "must be one per region (" + n + ")");
        }
        List<MemoryRegion> regions = new ArrayList<>();
        Map<MemoryRegion, Arena> arenas = new IdentityHashMap<>();
        try {
            MemoryTable building = MemoryTable.empty();
            for (int i = 0; i < n; i++) {
                long off = 8 + 32L * i;
                MemoryRegion r = mapRegion(m, "regions[" + i + "]", m.u64(off), m.u64(off + 8), m.u64(off + 16),
                        m.u64(off + 24), m.takeFd(i), arenas, building);
                regions.add(r);
                building = new MemoryTable(regions);
            }
        } catch (VhostUserProtocolException | RuntimeException e) {
            arenas.values().forEach(Arena::close);
            throw e;
        }
        replaceMemory(new MemoryTable(regions), arenas, List.copyOf(regionArenas.keySet()));
        return null;
    }

    private byte[] addMemReg(Message m) throws VhostUserProtocolException {
        if (memory.regions().size() >= options.maxMemSlots()) {
            throw new VhostUserProtocolException(m.name(), "regions", memory.regions().size(),
                    "all " + options.maxMemSlots() + " memory slots are in use");
        }
        Map<MemoryRegion, Arena> arenas = new IdentityHashMap<>();
        MemoryRegion r = mapRegion(m, "region", m.u64(8), m.u64(16), m.u64(24), m.u64(32), m.takeFd(0), arenas, memory);
        List<MemoryRegion> regions = new ArrayList<>(memory.regions());
        regions.add(r);
        replaceMemory(new MemoryTable(regions), arenas, List.of());
        return null;
    }

    private byte[] remMemReg(Message m) throws VhostUserProtocolException {
        long gpa = m.u64(8);
        long size = m.u64(16);
        long uaddr = m.u64(24);
        for (MemoryRegion r : memory.regions()) {
            if (r.guestPhysAddr() == gpa && r.size() == size && r.userAddr() == uaddr) {
                List<MemoryRegion> regions = new ArrayList<>(memory.regions());
                regions.remove(r);
                replaceMemory(new MemoryTable(regions), Map.of(), List.of(r));
                return null;
            }
        }
        throw new VhostUserProtocolException(m.name(), "region.guest_phys_addr", gpa,
                "no mapped region has this address, size 0x" + Long.toHexString(size) + " and user address 0x"
                        + Long.toHexString(uaddr));
    }

    private MemoryRegion mapRegion(Message m, String field, long gpa, long size, long uaddr, long mmapOffset,
                                   FileDescriptor fd, Map<MemoryRegion, Arena> arenas, MemoryTable existing)
            throws VhostUserProtocolException {
        try (fd) {
            if (size == 0) {
                throw new VhostUserProtocolException(m.name(), field + ".memory_size", size, "zero-sized region");
            }
            if (Long.compareUnsigned(gpa + size - 1, gpa) < 0) {
                throw new VhostUserProtocolException(m.name(), field + ".guest_phys_addr", gpa,
                        "+ memory_size 0x" + Long.toHexString(size) + " wraps 64 bits");
            }
            if (Long.compareUnsigned(uaddr + size - 1, uaddr) < 0) {
                throw new VhostUserProtocolException(m.name(), field + ".userspace_addr", uaddr,
                        "+ memory_size 0x" + Long.toHexString(size) + " wraps 64 bits");
            }
            if (mmapOffset < 0 || size < 0 || mmapOffset + size < 0) {
                throw new VhostUserProtocolException(m.name(), field + ".mmap_offset", mmapOffset,
                        "+ memory_size 0x" + Long.toHexString(size) + " is beyond 2^63");
            }
            if (existing.overlaps(gpa, uaddr, size)) {
                throw new VhostUserProtocolException(m.name(), field + ".guest_phys_addr", gpa,
                        "overlaps a region already in the table " + existing);
            }
            long fileSize = fileSize(fd, m, field);
            if (mmapOffset + size > fileSize) {
                // Touching a mapped page past the end of its file raises SIGBUS and kills the process.
                throw new VhostUserProtocolException(m.name(), field + ".memory_size", size, "mmap_offset 0x"
                        + Long.toHexString(mmapOffset) + " + memory_size runs past the end of the fd (" + fileSize + " bytes)");
            }
            Arena arena = Arena.ofShared();
            try {
                // Map from offset 0, as libvhost-user does: hugetlbfs needs huge-page-aligned mmap offsets.
                MemorySegment whole = Mmap.mapShared(fd, 0, mmapOffset + size, arena);
                MemoryRegion r = new MemoryRegion(gpa, size, uaddr, mmapOffset, whole.asSlice(mmapOffset, size));
                arenas.put(r, arena);
                return r;
            } catch (LinuxException e) {
                arena.close();
                throw new VhostUserProtocolException(m.name(), field + ".fd", fd.fd(), "mmap failed: " + e.getMessage());
            }
        }
    }

    private static long fileSize(FileDescriptor fd, Message m, String field) throws VhostUserProtocolException {
        try {
            return fd.size();
        } catch (LinuxException e) {
            throw new VhostUserProtocolException(m.name(), field + ".fd", fd.fd(), "fstat failed: " + e.getMessage());
        }
    }

    /**
     * Installs a new memory table. A table that no longer holds the areas of a started ring is refused before
     * anything changes (the new mappings are dropped, the rings keep running on the old table). Otherwise the
     * started rings stop (they hold translated addresses), the table is swapped, regions no longer in it are
     * unmapped, and every ring that has what it needs starts over the new table.
     */
    private void replaceMemory(MemoryTable next, Map<MemoryRegion, Arena> newArenas, List<MemoryRegion> unmap)
            throws VhostUserProtocolException {
        for (Vring v : vrings) {
            if (v.isStarted()) {
                try {
                    ringAreas(next, "memory table", v);
                } catch (VhostUserProtocolException e) {
                    newArenas.values().forEach(Arena::close);
                    throw e;
                }
            }
        }
        for (Vring v : vrings) {
            if (v.isStarted()) {
                v.base = stopRing(v);
            }
        }
        memory = next;
        regionArenas.putAll(newArenas);
        for (MemoryRegion r : unmap) {
            Arena a = regionArenas.remove(r);
            if (a != null) {
                a.close();
            }
        }
        VhostUserProtocolException first = null;
        for (Vring v : vrings) {
            try {
                maybeStart(v, "memory table");
            } catch (VhostUserProtocolException e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    // ---- rings ----

    private Vring ring(Message m, long index) throws VhostUserProtocolException {
        if (index < 0 || index >= vrings.length) {
            throw new VhostUserProtocolException(m.name(), "index", index,
                    "ring index beyond the " + vrings.length + " queues of this device");
        }
        return vrings[(int) index];
    }

    private Vring stoppedRing(Message m, long index) throws VhostUserProtocolException {
        Vring v = ring(m, index);
        if (v.isStarted()) {
            throw new VhostUserProtocolException(m.name(), "index", index, "ring is started; stop it with GET_VRING_BASE first");
        }
        return v;
    }

    private byte[] setVringNum(Message m) throws VhostUserProtocolException {
        Vring v = stoppedRing(m, Integer.toUnsignedLong(m.u32(0)));
        long num = Integer.toUnsignedLong(m.u32(4));
        if (num == 0 || num > device.maxQueueSize() || Long.bitCount(num) != 1) {
            throw new VhostUserProtocolException(m.name(), "num", num,
                    "queue size must be a power of two in [1, " + device.maxQueueSize() + "]");
        }
        v.num = (int) num;
        return null;
    }

    private byte[] setVringAddr(Message m) throws VhostUserProtocolException {
        Vring v = stoppedRing(m, Integer.toUnsignedLong(m.u32(0)));
        v.descAddr = m.u64(8);
        v.usedAddr = m.u64(16);
        v.availAddr = m.u64(24);
        v.addrSet = true;
        return null;
    }

    private byte[] setVringBase(Message m) throws VhostUserProtocolException {
        Vring v = stoppedRing(m, Integer.toUnsignedLong(m.u32(0)));
        long base = Integer.toUnsignedLong(m.u32(4));
        if (base > 0xFFFF) {
            throw new VhostUserProtocolException(m.name(), "num", base, "a split ring base is a 16-bit index");
        }
        v.base = (int) base;
        return null;
    }

    private byte[] getVringBase(Message m) throws VhostUserProtocolException {
        Vring v = ring(m, Integer.toUnsignedLong(m.u32(0)));
        int base = v.isStarted() ? stopRing(v) : v.base;
        v.base = base;
        // The ring is stopped: its kick and call fds go, new ones come with the next start (libvhost-user does so).
        v.closeKick();
        v.closeCalls();
        ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
        b.putInt(v.index).putInt(base);
        return b.array();
    }

    private byte[] setVringKick(Message m) throws VhostUserProtocolException {
        long p = m.u64(0);
        Vring v = ring(m, p & ProtocolFeatures.VRING_IDX_MASK);
        checkIndexPayload(m, p);
        int savedBase = v.isStarted() ? stopRing(v) : v.base;
        v.base = savedBase;
        v.closeKick();
        v.kick = takeEventFd(m, p);
        v.kickSet = true;
        maybeStart(v, m.name());
        return null;
    }

    private byte[] setVringCall(Message m) throws VhostUserProtocolException {
        long p = m.u64(0);
        Vring v = ring(m, p & ProtocolFeatures.VRING_IDX_MASK);
        checkIndexPayload(m, p);
        EventFd next = takeEventFd(m, p);
        if (next != null) {
            // Signal the new call eventfd once, as libvhost-user does. Used buffers published while the ring had no
            // call eventfd would otherwise never be notified: GET_VRING_BASE closes it, and QEMU restarts a ring
            // with SET_VRING_KICK (which starts it here) before SET_VRING_CALL, so the buffers that piled up while
            // it was stopped are used with nobody to tell, and a guest asleep waiting for them hangs. A spurious
            // notification is harmless: drivers re-check the used ring.
            try {
                next.write(1);
            } catch (LinuxException e) {
                next.close();
                throw new VhostUserProtocolException(m.name(), "fd", 1, "cannot signal the call eventfd: " + e.getMessage());
            }
        }
        EventFd old = v.call.target();
        v.call.target(next);
        if (old != null) {
            if (v.isStarted()) {
                v.retiredCalls.add(old);
            } else {
                old.close();
            }
        }
        return null;
    }

    private byte[] setVringErr(Message m) throws VhostUserProtocolException {
        long p = m.u64(0);
        Vring v = ring(m, p & ProtocolFeatures.VRING_IDX_MASK);
        checkIndexPayload(m, p);
        if (v.err != null) {
            v.err.close();
        }
        v.err = takeEventFd(m, p);
        return null;
    }

    private static void checkIndexPayload(Message m, long p) throws VhostUserProtocolException {
        long unknown = p & ~(ProtocolFeatures.VRING_IDX_MASK | ProtocolFeatures.VRING_NOFD_MASK);
        if (unknown != 0) {
            throw new VhostUserProtocolException(m.name(), "u64", p, "bits 0x" + Long.toHexString(unknown)
                    + " are neither the ring index nor the NOFD flag");
        }
    }

    /** The eventfd the message carries, or null with NOFD; the fd count must agree with the flag. */
    private static EventFd takeEventFd(Message m, long p) throws VhostUserProtocolException {
        boolean nofd = (p & ProtocolFeatures.VRING_NOFD_MASK) != 0;
        if (nofd != (m.fdCount() == 0) || m.fdCount() > 1) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(),
                    nofd ? "NOFD is set but a descriptor came with the message" : "exactly one eventfd must come with it");
        }
        return nofd ? null : EventFd.adopt(m.takeFd(0));
    }

    private byte[] setVringEnable(Message m) throws VhostUserProtocolException {
        Vring v = ring(m, Integer.toUnsignedLong(m.u32(0)));
        long on = Integer.toUnsignedLong(m.u32(4));
        if (on > 1) {
            throw new VhostUserProtocolException(m.name(), "num", on, "must be 0 or 1");
        }
        if ((features & bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES)) == 0 && featuresSet) {
            throw new VhostUserProtocolException(m.name(), "features", features,
                    "SET_VRING_ENABLE needs VHOST_USER_F_PROTOCOL_FEATURES negotiated");
        }
        v.enabled = on == 1;
        if (v.isStarted()) {
            v.started.enabled(v.enabled);
            device.queueEnabled(v.index, v.enabled);
        } else {
            maybeStart(v, m.name());
        }
        return null;
    }

    /**
     * Starts the ring once everything it needs is there: size, addresses, a kick (or NOFD), enabled, and a
     * memory table that maps its three areas. A ring whose kick arrived before it was enabled starts here,
     * and the device's first look at it finds any buffers made available meanwhile: nothing is lost.
     */
    private void maybeStart(Vring v, String request) throws VhostUserProtocolException {
        if (v.isStarted() || !v.kickSet || !v.enabled || v.num == 0 || !v.addrSet || memory.isEmpty()) {
            return;
        }
        SplitRingAreas areas = ringAreas(memory, request, v);
        SplitDeviceQueue queue = new SplitDeviceQueue(areas, memory.guestMemory(),
                DeviceOptions.fromFeatures(features, options.ordering(), options.cachedAvailOnEnable()), v.call);
        try {
            queue.restart(v.base);
        } catch (VirtqueueException e) {
            throw new VhostUserProtocolException(request, "vring[" + v.index + "].base", v.base, e.getMessage());
        }
        v.queue = queue;
        v.started = new QueueContext(v.index, queue, memory.guestMemory(), v.kick, v.enabled);
        device.startQueue(v.index, v.started);
    }

    /** The ring's three areas in {@code table}, each checked to lie inside one region and be aligned. */
    private static SplitRingAreas ringAreas(MemoryTable table, String request, Vring v) throws VhostUserProtocolException {
        int q = v.num;
        MemorySegment desc = userArea(table, request, v, "desc", v.descAddr, SplitLayout.descTableBytes(q), SplitLayout.DESC_ALIGN);
        MemorySegment avail = userArea(table, request, v, "avail", v.availAddr, SplitLayout.availRingBytes(q), SplitLayout.AVAIL_ALIGN);
        MemorySegment used = userArea(table, request, v, "used", v.usedAddr, SplitLayout.usedRingBytes(q), SplitLayout.USED_ALIGN);
        return new SplitRingAreas(q, desc, avail, used);
    }

    private static MemorySegment userArea(MemoryTable table, String request, Vring v, String name, long addr, long bytes,
                                          int align) throws VhostUserProtocolException {
        String field = "vring[" + v.index + "]." + name;
        MemorySegment s = table.userSlice(addr, bytes);
        if (s == null) {
            throw new VhostUserProtocolException(request, field, addr, "ring area of " + bytes
                    + " bytes is not inside one region of " + table);
        }
        if (s.address() % align != 0) {
            throw new VhostUserProtocolException(request, field, addr, "must be " + align + "-byte aligned");
        }
        return s;
    }

    /** Stops a started ring and returns the available index processing would resume at. */
    private int stopRing(Vring v) {
        device.stopQueue(v.index);
        int next = v.queue.lastAvailIdx();
        v.started = null;
        for (EventFd r : v.retiredCalls) {
            r.close();
        }
        v.retiredCalls.clear();
        return next;
    }

    // ---- config, status, reset ----

    private byte[] getConfig(Message m) throws VhostUserProtocolException {
        long offset = Integer.toUnsignedLong(m.u32(0));
        long size = Integer.toUnsignedLong(m.u32(4));
        int flags = m.u32(8);
        byte[] config = device.config();
        if (size > 256 || m.size() != 12 + size) {
            throw new VhostUserProtocolException(m.name(), "size", size, "must be <= 256 and match the payload ("
                    + (m.size() - 12) + " bytes of data)");
        }
        ByteBuffer b = ByteBuffer.allocate((int) (12 + size)).order(ByteOrder.nativeOrder());
        b.putInt((int) offset).putInt((int) size).putInt(flags);
        for (long i = 0; i < size; i++) {
            // bytes past the device's config space read as zero, as config space beyond its fields does
            b.put(offset + i < config.length ? config[(int) (offset + i)] : 0);
        }
        return b.array();
    }

    private byte[] setConfig(Message m) throws VhostUserProtocolException {
        long size = Integer.toUnsignedLong(m.u32(4));
        int flags = m.u32(8);
        if (size > 256 || m.size() != 12 + size) {
            throw new VhostUserProtocolException(m.name(), "size", size, "must be <= 256 and match the payload");
        }
        if (flags != 1) { // 1 = live migration restoring state: nothing of ours to restore
            throw new VhostUserProtocolException(m.name(), "offset", Integer.toUnsignedLong(m.u32(0)),
                    "the device's configuration space is read-only");
        }
        return null;
    }

    private byte[] setStatus(Message m) {
        status = m.u64(0) & 0xFF;
        return null;
    }

    private byte[] resetDevice() {
        stopAll();
        for (Vring v : vrings) {
            v.clear();
        }
        device.reset();
        features = 0;
        featuresSet = false;
        status = 0;
        return null;
    }

    private void stopAll() {
        for (Vring v : vrings) {
            if (v.isStarted()) {
                v.base = stopRing(v);
            }
        }
    }

    /** Stops every ring, unmaps all memory and closes every fd: the connection is gone. */
    @Override
    public void close() {
        try {
            stopAll();
        } catch (RuntimeException e) {
            LOG.warning("stopping rings on close: " + e);
        }
        for (Vring v : vrings) {
            v.clear();
        }
        device.reset();
        memory = MemoryTable.empty();
        regionArenas.values().forEach(Arena::close);
        regionArenas.clear();
    }
}
