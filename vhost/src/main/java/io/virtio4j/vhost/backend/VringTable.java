package io.virtio4j.vhost.backend;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.device.PackedDeviceQueue;
import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.error.GuestMemoryFaultException;
import io.virtio4j.core.error.InvalidInflightRegionException;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.vhost.events.DirtyLoggingSwitched;
import io.virtio4j.vhost.events.InflightResubmitted;
import io.virtio4j.vhost.events.MemoryTableChanged;
import io.virtio4j.vhost.events.QueueBroken;
import io.virtio4j.vhost.events.RingStarted;
import io.virtio4j.vhost.events.RingStopped;
import io.virtio4j.vhost.memory.MemoryTable;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import io.virtio4j.vhost.protocol.VringAddress;
import io.virtio4j.vhost.protocol.VringFd;
import io.virtio4j.vhost.protocol.VringState;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

/**
 * The device's rings and their lifecycle: what the front-end set up for each (size, addresses, base, kick,
 * call and err eventfds, enabled), starting a ring once it has everything over the current memory table,
 * stopping it (GET_VRING_BASE, a kick replaced, a memory table swapped, reset), and handing started rings to
 * the device. Control thread only.
 */
final class VringTable implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(VringTable.class.getName());

    private final VirtioDevice device;
    private final BackendOptions options;
    private final MemoryMapper memory;
    private final Vring[] vrings;
    /** Negotiated virtio features, for the queues started from now on. */
    private long features;
    /** The inflight area rings started from now on record in (SET_INFLIGHT_FD), or null: rings are untracked. */
    private InflightArea inflight;
    /** The dirty log (SET_LOG_BASE) rings log in while VHOST_F_LOG_ALL is negotiated, or null. */
    private DirtyLogArea log;
    /**
     * The log may be gone on the front-end's side: every ring stopped (GET_VRING_BASE, status 0) while LOG_ALL was
     * negotiated. QEMU frees its log when its device stops (vhost_dev_stop's vhost_log_put) and, starting it again
     * while migrating, sends the rings' setup and kicks first and the new SET_LOG_BASE after them; a ring started on
     * the old log meanwhile would mark pages nobody reads, and the destination would get stale pages under used
     * entries the guest consumed. So a ring with the log flag is held back, not started, while LOG_ALL is on and the
     * log is stale or missing, until the next SET_LOG_BASE (or LOG_ALL or its flag cleared) starts it.
     */
    private boolean logStale;
    /** What stopped rings' call and error numbers refer to ({@link #sink()}), or null before the first. */
    private EventFd sink;

    VringTable(VirtioDevice device, BackendOptions options, MemoryMapper memory) {
        this.device = device;
        this.options = options;
        this.memory = memory;
        this.vrings = new Vring[device.maxQueues()];
        for (int i = 0; i < vrings.length; i++) {
            vrings[i] = new Vring(i);
        }
    }

    /**
     * New virtio features (SET_FEATURES); refused while a ring runs on different ones, but for VHOST_F_LOG_ALL alone,
     * which a front-end sets and clears on running rings to start and end a migration: every started ring must then
     * be stopped and started again ({@link #switchLogging}) to log from its restart on, or no longer. Returns whether
     * it must: the features are committed either way, and the caller commits its own before it switches, so that a
     * ring that fails to restart leaves no two views of what was negotiated.
     */
    boolean features(String request, long next) throws VhostUserProtocolException {
        long logAll = ProtocolFeatures.bit(ProtocolFeatures.VHOST_F_LOG_ALL);
        boolean logOnly = (next ^ features) == logAll;
        for (Vring v : vrings) {
            if (v.isStarted() && next != features && !logOnly) {
                throw new VhostUserProtocolException(request, "features", next,
                        "ring " + v.index + " is started: features cannot change under it (VHOST_F_LOG_ALL alone may)");
            }
        }
        features = next;
        return logOnly;
    }

    /** After {@link #features} switched VHOST_F_LOG_ALL alone: restarts the started rings (see {@link #restartStarted}). */
    void switchLogging(String request) throws VhostUserProtocolException {
        // a stale log (its memory table replaced) is not one rings may log in: not mapped for them
        DirtyLoggingSwitched.emit(logAll(), log != null && !logStale);
        restartStarted(request);
    }

    /**
     * The dirty log rings log in while VHOST_F_LOG_ALL is negotiated (SET_LOG_BASE), or null. Started rings restart
     * over it when they log (see {@link #restartStarted}); the log replaced is unmapped once no ring uses it.
     */
    void log(String request, DirtyLogArea next) throws VhostUserProtocolException {
        DirtyLogArea previous = log;
        log = next;
        logStale = false;
        try {
            if (logAll()) {
                restartStarted(request);
            }
        } finally {
            if (previous != null && previous != next) {
                previous.retired = true;
                unmapWhenUnused(previous);
            }
        }
    }

    private boolean logAll() {
        return VirtioFeatures.has(features, ProtocolFeatures.VHOST_F_LOG_ALL);
    }

    /**
     * Switches logging on or off under running rings by stopping each started ring and starting it again, rather
     * than swapping a log into a running queue: the stop is the one the device already knows (GET_VRING_BASE's, a
     * memory table swap's): its thread completes and publishes what it holds and lets the queue go, and the new
     * queue resumes where the old one stood, so no buffer is lost or taken twice; the queue and the device read
     * their log from a final field of what they were handed, so the hot path pays one null check and no volatile
     * read for a switch that happens twice per migration. Rings with the log flag that were held back (see
     * {@link #logStale}) start here if they no longer are. Every ring is tried; the first failure is thrown.
     */
    private void restartStarted(String request) throws VhostUserProtocolException {
        VhostUserProtocolException first = null;
        for (Vring v : vrings) {
            if (v.isStarted() || (v.addrFlags & VringAddress.F_LOG) != 0) {
                stop(v, request);
                try {
                    maybeStart(v, request);
                } catch (VhostUserProtocolException e) {
                    first = first == null ? e : first;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** The ring format of the negotiated features. */
    RingFormat format() {
        return packed() ? RingFormat.PACKED : RingFormat.SPLIT;
    }

    /**
     * The inflight area rings record in from their next start (GET_INFLIGHT_FD, SET_INFLIGHT_FD), or null for none.
     * Rings started before keep the slice of the area they started with: the one replaced is unmapped once the last
     * of them stops.
     */
    void inflight(InflightArea next) {
        InflightArea previous = inflight;
        inflight = next;
        if (previous != null && previous != next) {
            retire(previous);
        }
    }

    private void retire(InflightArea area) {
        area.retired = true;
        unmapWhenUnused(area);
    }

    /**
     * Unmaps a retired {@code area} once no started ring uses it, through the device: a worker that did not give its
     * ring back may still be writing to it.
     */
    private void unmapWhenUnused(InflightArea area) {
        if (area.retired && area.users == 0) {
            device.retire(area::unmap);
        }
    }

    private void unmapWhenUnused(DirtyLogArea area) {
        if (area.retired && area.users == 0) {
            device.retire(area::unmap);
        }
    }

    /** Without protocol features rings are enabled from the start (there is no SET_VRING_ENABLE). */
    void enableAll() {
        for (Vring v : vrings) {
            v.enabled = true;
        }
    }

    // ---- one method per ring request ----

    void setNum(String request, VringState s) throws VhostUserProtocolException {
        Vring v = stoppedRing(request, s.index());
        if (packed()) {
            // a packed ring's size need not be a power of two
            if (s.num() == 0 || s.num() > Math.min(device.maxQueueSize(), PackedLayout.MAX_QUEUE_SIZE)) {
                throw new VhostUserProtocolException(request, "num", s.num(), "packed queue size must be in [1, "
                        + Math.min(device.maxQueueSize(), PackedLayout.MAX_QUEUE_SIZE) + "]");
            }
        } else if (s.num() == 0 || s.num() > device.maxQueueSize() || Long.bitCount(s.num()) != 1) {
            throw new VhostUserProtocolException(request, "num", s.num(),
                    "queue size must be a power of two in [1, " + device.maxQueueSize() + "]");
        }
        v.num = (int) s.num();
    }

    /**
     * The ring's addresses, and whether its used ring is logged (VHOST_VRING_F_LOG) at which guest-physical address.
     * On a started ring only the last two may change (QEMU sets and clears the flag on running rings around a
     * migration): the ring then restarts (see {@link #restartStarted}) and logs its used ring from then on, or no
     * longer.
     */
    void setAddr(String request, VringAddress a) throws VhostUserProtocolException {
        Vring v = ring(request, a.index());
        if (v.isStarted()) {
            if (a.desc() != v.descAddr || a.used() != v.usedAddr || a.avail() != v.availAddr) {
                throw new VhostUserProtocolException(request, "index", a.index(), "ring is started: its areas cannot "
                        + "move under it (only the log flag and address may change); stop it with GET_VRING_BASE first");
            }
            v.addrFlags = a.flags();
            v.logAddr = a.log();
            stop(v, request);
            maybeStart(v, request);
            return;
        }
        v.descAddr = a.desc();
        v.usedAddr = a.used();
        v.availAddr = a.avail();
        v.addrFlags = a.flags();
        v.logAddr = a.log();
        v.addrSet = true;
    }

    /**
     * Where the ring resumes. A split ring's base is the 16-bit avail index (the used index is in the used ring);
     * a packed ring's carries both positions and wrap counters (see {@link QueueState#fromPackedBase}), checked
     * against the ring's size when it starts.
     */
    void setBase(String request, VringState s) throws VhostUserProtocolException {
        Vring v = stoppedRing(request, s.index());
        if (s.num() > (packed() ? 0xFFFF_FFFFL : 0xFFFF)) {
            throw new VhostUserProtocolException(request, "num", s.num(), packed()
                    ? "a packed ring base has 32 bits" : "a split ring base is a 16-bit index");
        }
        v.base = s.num();
    }

    /** Stops the ring and answers where processing would resume; its kick and call eventfds go. */
    VringState getBase(String request, VringState s) throws VhostUserProtocolException {
        Vring v = ring(request, s.index());
        stop(v, request);
        staleIfAllStopped();
        // The ring is stopped: its kick and call fds go, new ones come with the next start (libvhost-user does so).
        v.closeKick();
        v.callFd.empty(this::sink);
        return new VringState(v.index, v.base);
    }

    /**
     * The state a packed ring starts from. QEMU sends both halves of the base; DPDK's virtio-user sends only the
     * avail half (0x8000 for a fresh ring: position 0, wrap counter 1, and 0 above), and DPDK's own back-end ignores
     * the used half altogether, taking the used position and wrap counter equal to the avail ones (nothing is in
     * flight across a stop). So a base whose used half is 0 is read the same way; a used half of 0 is otherwise a
     * ring stopped with its used position at 0 in an odd lap, which then resumes as if nothing were in flight.
     */
    private static QueueState packedState(long base) {
        QueueState s = QueueState.fromPackedBase(base);
        return (base >>> 16) == 0 ? new QueueState(s.nextAvail(), s.availWrap(), s.nextAvail(), s.availWrap()) : s;
    }

    /** Whether the negotiated features make the rings packed (VIRTIO_F_RING_PACKED). */
    private boolean packed() {
        return VirtioFeatures.has(features, VirtioFeatures.RING_PACKED);
    }

    /** A new kick eventfd (or polling, with NOFD): the ring stops if started, and starts again over it. */
    void setKick(Message m, VringFd p) throws VhostUserProtocolException {
        Vring v = ring(m.name(), p.index());
        EventFd kick = takeEventFd(m, p);
        try {
            stop(v, m.name());
        } catch (RuntimeException e) {
            if (kick != null) {
                kick.close(); // owned by no ring yet
            }
            throw e;
        }
        v.closeKick();
        v.kick = kick;
        v.kickSet = true;
        maybeStart(v, m.name());
    }

    /** A new call eventfd (or none: the front-end polls); swapped under a running ring. */
    void setCall(Message m, VringFd p) throws VhostUserProtocolException {
        Vring v = ring(m.name(), p.index());
        EventFd next = withSink(m, takeEventFd(m, p));
        if (next != null) {
            // Signal the new call eventfd once, as libvhost-user does. Used buffers published while the ring had no
            // call eventfd would otherwise never be notified: GET_VRING_BASE closes it, and QEMU restarts a ring
            // with SET_VRING_KICK (which starts it here) before SET_VRING_CALL, so the buffers that piled up while
            // it was stopped are used with nobody to tell, and a guest asleep waiting for them hangs. A spurious
            // notification is harmless: drivers re-check the used ring. A counter the front-end saturated (EAGAIN)
            // is notified already.
            try {
                next.tryWrite(1);
            } catch (LinuxException e) {
                next.close();
                throw new VhostUserProtocolException(m.name(), "fd", 1, "cannot signal the call eventfd: " + e.getMessage());
            }
        }
        v.callFd.replace(next);
    }

    void setErr(Message m, VringFd p) throws VhostUserProtocolException {
        Vring v = ring(m.name(), p.index());
        v.err.replace(withSink(m, takeEventFd(m, p)));
    }

    /**
     * Makes sure the sink exists before a slot gets a number that will have to be parked on it (see EventFdSlot):
     * made here, a lack of descriptors refuses this request, instead of failing a ring's stop or the connection's
     * end later. Returns {@code next}; closes it when refusing.
     */
    private EventFd withSink(Message m, EventFd next) throws VhostUserProtocolException {
        if (next != null) {
            try {
                sink();
            } catch (LinuxException e) {
                int number = next.fileDescriptor().fd();
                next.close();
                throw new VhostUserProtocolException(m.name(), "fd", number,
                        "no descriptor for the ring's stop-time sink eventfd: " + e.getMessage());
            }
        }
        return next;
    }

    void setEnable(String request, VringState s) throws VhostUserProtocolException {
        Vring v = ring(request, s.index());
        if (s.num() > 1) {
            throw new VhostUserProtocolException(request, "num", s.num(), "must be 0 or 1");
        }
        v.enabled = s.num() == 1;
        if (v.isStarted()) {
            v.started.enabled(v.enabled);
            device.queueEnabled(v.index, v.enabled);
        } else {
            maybeStart(v, request);
        }
    }

    // ---- memory table changes ----

    /**
     * Installs a prepared memory table. A table that no longer holds the areas of a started ring is refused before
     * anything changes (the caller drops the change, the rings keep running on the old table). Otherwise the
     * started rings stop (they hold translated addresses), the table is installed, and every ring that has what it
     * needs starts over it.
     */
    void swapMemory(String request, MemoryMapper.Change change) throws VhostUserProtocolException {
        for (Vring v : vrings) {
            if (v.isStarted()) {
                ringAreas(change.next(), "memory table", v);
            }
        }
        stopAll(request);
        // Through the device: a thread of it that did not give a ring back (before a RESET_DEVICE) may still
        // touch the regions that go.
        device.retire(change.install());
        MemoryTableChanged.emit(request, change.next());
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

    // ---- reset and close ----

    /**
     * Stops every ring and forgets its setup, closing its eventfds (RESET_DEVICE); features back to none. The
     * inflight area goes too: after a reset nothing in flight is to be resubmitted (QEMU makes a fresh one on a VM
     * reset).
     */
    void reset() {
        stopAll("RESET_DEVICE");
        for (Vring v : vrings) {
            v.clear(this::sink);
        }
        features = 0;
        inflight(null);
        dropLog();
    }

    /** Once the front-end stopped every ring while logging, the log is taken as gone (see {@link #logStale}). */
    private void staleIfAllStopped() {
        for (Vring v : vrings) {
            if (v.isStarted()) {
                return;
            }
        }
        logStale |= logAll() && log != null;
    }

    /** Forgets the dirty log; it is unmapped once no ring logs in it (the connection's end, a reset). */
    void dropLog() {
        DirtyLogArea previous = log;
        log = null;
        logStale = false;
        if (previous != null) {
            previous.retired = true;
            unmapWhenUnused(previous);
        }
    }

    /**
     * The device is reset by a status write of 0: every ring stops, keeping its base (what a GET_VRING_BASE after
     * it answers), and its kick goes, so that no ring starts again before the front-end sets it up anew
     * (QEMU's start sends SET_VRING_KICK for every ring). The rest of each ring's setup stays, the call and error
     * eventfds too: QEMU sends SET_VRING_ERR only once, when it initialises the device.
     */
    void stopForReset() {
        try {
            stopAll("SET_STATUS");
            staleIfAllStopped();
        } finally {
            for (Vring v : vrings) {
                if (!v.isStarted()) {
                    v.closeKick();
                }
            }
        }
    }

    /**
     * Stops every ring and closes every eventfd: the connection is gone. The inflight area stays mapped: the caller
     * drops it ({@code inflight(null)}) once the device is reset, so that the device's retire path knows of every
     * thread that did not stop.
     */
    @Override
    public void close() {
        try {
            stopAll("connection closed");
        } catch (RuntimeException e) {
            LOG.warning("stopping rings on close: " + e);
        }
        for (Vring v : vrings) {
            v.clear(this::sink);
        }
    }

    /**
     * After {@link #close}: what closes the rings' call and error eventfd numbers and the sink, for the device's
     * retire path to run once none of its threads may still signal them (see EventFdSlot).
     */
    Runnable releaseEventFds() {
        List<EventFd> numbers = new ArrayList<>();
        for (Vring v : vrings) {
            v.callFd.release(numbers);
            v.err.release(numbers);
        }
        if (sink != null) {
            numbers.add(sink);
            sink = null;
        }
        return () -> numbers.forEach(EventFd::close);
    }

    /**
     * The eventfd a stopped ring's call and error numbers refer to (see EventFdSlot): nobody reads it; created with
     * the first call or error eventfd ({@link #withSink}), closed with the numbers ({@link #releaseEventFds}).
     */
    private EventFd sink() {
        if (sink == null) {
            sink = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
        }
        return sink;
    }

    // ---- the lifecycle ----

    private Vring ring(String request, long index) throws VhostUserProtocolException {
        if (index < 0 || index >= vrings.length) {
            throw new VhostUserProtocolException(request, "index", index,
                    "ring index beyond the " + vrings.length + " queues of this device");
        }
        return vrings[(int) index];
    }

    private Vring stoppedRing(String request, long index) throws VhostUserProtocolException {
        Vring v = ring(request, index);
        if (v.isStarted()) {
            throw new VhostUserProtocolException(request, "index", index, "ring is started; stop it with GET_VRING_BASE first");
        }
        return v;
    }

    /**
     * The eventfd the message carries, or null with NOFD; the fd count must agree with the flag. The caller owns
     * what this returns; a descriptor that cannot be made a non-blocking eventfd is closed and refused.
     */
    private static EventFd takeEventFd(Message m, VringFd p) throws VhostUserProtocolException {
        if (p.noFd() != (m.fdCount() == 0) || m.fdCount() > 1) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(), p.noFd()
                    ? "NOFD is set but a descriptor came with the message" : "exactly one eventfd must come with it");
        }
        if (p.noFd()) {
            return null;
        }
        FileDescriptor fd = m.takeFd(0);
        int number = fd.fd();
        try {
            return EventFd.adopt(fd);
        } catch (LinuxException e) {
            fd.close();
            throw new VhostUserProtocolException(m.name(), "fd", number, "cannot be used as an eventfd: " + e.getMessage());
        }
    }

    /**
     * Starts the ring once everything it needs is there: size, addresses, a kick (or NOFD), enabled, and a
     * memory table that maps its three areas. A ring whose kick arrived before it was enabled starts here,
     * and the device's first look at it finds any buffers made available meanwhile: nothing is lost.
     */
    private void maybeStart(Vring v, String request) throws VhostUserProtocolException {
        MemoryTable table = memory.table();
        if (v.isStarted() || !v.kickSet || !v.enabled || v.num == 0 || !v.addrSet || table.isEmpty()) {
            return;
        }
        if (logAll() && (v.addrFlags & VringAddress.F_LOG) != 0 && (log == null || logStale)) {
            return; // held back until a log the front-end reads arrives (see logStale)
        }
        RingAreas areas = ringAreas(table, request, v);
        InflightArea area = inflight;
        MemorySegment region = area != null ? inflightRegion(request, v, area) : null;
        DirtyLogArea logging = logAll() ? log : null;
        DeviceQueue queue;
        QueueState start;
        int resubmitted = 0;
        boolean restarting = false;
        try {
            // Reading the ring (the used index below) can fault if the front-end shrank the file under it.
            queue = DeviceQueue.over(areas, table.guestMemory(),
                    DeviceOptions.fromFeatures(features, options.ordering(), options.cachedAvailOnEnable()), v.call);
            // A split base gives the avail index only: the used index is the one the new queue read from the ring.
            QueueState state = areas instanceof PackedRingAreas ? packedState(v.base)
                    : QueueState.split((int) v.base, queue.state().nextUsed());
            if (logging != null && (v.addrFlags & VringAddress.F_LOG) != 0) {
                // before the restart: a packed restart over an inflight area writes descriptor flags
                logUsedRing(request, v, queue, logging, table);
            }
            restarting = true;
            if (region == null) {
                queue.restart(state);
            } else {
                resubmitted = queue.restart(state, region);
                if (resubmitted > 0) {
                    LOG.info("ring " + v.index + ": " + resubmitted + " buffers in flight before resubmitted from the inflight area");
                }
            }
            // Where the queue stands, not the base the front-end sent: over an inflight area the restart resumes
            // past what it resubmits (a split ring at its used index plus those), whatever the base said.
            start = queue.state();
        } catch (InvalidInflightRegionException e) {
            // the field names the region's, e.g. inflight.desc[7].next: the front-end handed back an area no back-end wrote
            throw new VhostUserProtocolException(request, "vring[" + v.index + "]." + e.field(), e.value(), e.getMessage());
        } catch (VirtqueueException e) {
            throw new VhostUserProtocolException(request, "vring[" + v.index + "].base", v.base, e.getMessage());
        } catch (InternalError e) {
            if (!GuestMemoryFaultException.isGuestMemoryFault(e)) {
                throw e;
            }
            // The ring's pages are gone (the front-end shrank the file under its region), or, recovering from the
            // inflight area, the area's (an unsealed area shrunk): its request fails, the connection and the other
            // rings go on.
            if (restarting && region != null) {
                throw new VhostUserProtocolException(request, "vring[" + v.index + "].inflight", v.index,
                        "recovering from the ring and its inflight region faulted (SIGBUS: the file under the ring's"
                                + " memory region or under the inflight area was shrunk): " + e.getMessage());
            }
            throw new VhostUserProtocolException(request, "vring[" + v.index + "].used_addr", v.usedAddr,
                    "reading the ring faulted (SIGBUS: the file under its memory region was shrunk): " + e.getMessage());
        }
        QueueContext context = new QueueContext(v.index, queue, table.guestMemory(), v.kick, v.enabled,
                features & ~ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES), v.err,
                logging != null ? logging.log() : null);
        try {
            device.startQueue(v.index, context);
        } catch (QueueStartRefusedException e) {
            // Not started: nothing of the ring was handed over, so nothing is to be taken back.
            throw new VhostUserProtocolException(request, "vring[" + v.index + "]", v.index,
                    "the device refused to start it: " + e.getMessage(), e);
        } catch (LinuxException e) {
            // The device could not use the front-end's descriptors (a kick epoll cannot watch, e.g. a memfd): the
            // front-end's error, and as with a refusal the ring is not started.
            throw new VhostUserProtocolException(request, "vring[" + v.index + "].kick",
                    v.kick != null ? v.kick.fileDescriptor().fd() : VringFd.NOFD,
                    "the device cannot use the ring's descriptors: " + e.getMessage(), e);
        }
        v.queue = queue;
        v.started = context;
        // once the device took the ring: a refused start resubmits nothing
        RingStarted.emit(v.index, areas.format(), v.num, start, area != null, logging != null);
        if (resubmitted > 0) {
            InflightResubmitted.emit(v.index, resubmitted);
        }
        if (area != null) {
            area.users++;
            v.inflight = area;
        }
        if (logging != null) {
            logging.users++;
            v.logging = logging;
        }
    }

    /**
     * Has the queue log its own ring writes, once the log is checked to have a bit for every page of them: an
     * address the log does not cover is the front-end's error, refused here rather than breaking the queue at its
     * first publication. Split: the used ring, at the ring's {@code log_guest_addr}. Packed: the device event area
     * at {@code log_guest_addr} (QEMU gives the device area's address there for a packed ring) and the used
     * descriptors in the descriptor ring, at the guest-physical address its region maps its virtual address to (the
     * protocol gives none: QEMU marks the descriptor ring of a packed ring nowhere else, and DPDK logs it at offsets
     * from {@code log_guest_addr}, which for QEMU's packed rings is the device area; the region's own mapping is
     * right whatever the front-end meant).
     */
    private void logUsedRing(String request, Vring v, DeviceQueue queue, DirtyLogArea logging, MemoryTable table)
            throws VhostUserProtocolException {
        DirtyLog log = logging.log();
        long descGpa = -1;
        if (queue instanceof PackedDeviceQueue) {
            long descBytes = PackedLayout.descRingBytes(v.num);
            descGpa = table.userToGuest(v.descAddr, descBytes);
            checkLogged(request, v, "desc", descGpa, descBytes, log);
            checkLogged(request, v, "log", v.logAddr, PackedLayout.EVENT_SIZE, log);
        } else {
            // avail_event (the used ring's last 2 bytes) only with EVENT_IDX: the queue never writes it otherwise,
            // and QEMU sizes its log by the used ring without it (vhost_get_used_size), so counting it would refuse
            // a used ring that ends at the top of guest memory, and a refusal during a log switch aborts QEMU 7.2
            long usedBytes = SplitLayout.usedRingBytes(v.num) - (VirtioFeatures.has(features, VirtioFeatures.EVENT_IDX) ? 0 : 2);
            checkLogged(request, v, "log", v.logAddr, usedBytes, log);
        }
        queue.logUsed(log, v.logAddr, descGpa);
    }

    private static void checkLogged(String request, Vring v, String field, long gpa, long bytes, DirtyLog log)
            throws VhostUserProtocolException {
        long end = gpa + bytes - 1;
        long lastPage = Long.compareUnsigned(end, gpa) < 0 ? -1L : end >>> DirtyLog.PAGE_SHIFT;
        if (Long.compareUnsigned(lastPage, log.pages()) >= 0) {
            throw new VhostUserProtocolException(request, "vring[" + v.index + "]." + field, field.equals("log") ? gpa
                    : v.descAddr, "the ring area's " + bytes + " bytes (at guest-physical 0x" + Long.toHexString(gpa)
                    + ") are not covered by the dirty log of " + log.byteSize() + " bytes (pages [0, " + log.pages() + "))");
        }
    }

    /**
     * Ring {@code v}'s region of the inflight area, once the ring is checked to fit it: QEMU sizes the area for
     * every queue it starts, so a ring beyond it, larger than its queue size or of another format is the
     * front-end's error, not a ring to run untracked (its buffers would not survive a restart, silently).
     */
    private MemorySegment inflightRegion(String request, Vring v, InflightArea area) throws VhostUserProtocolException {
        if (v.index >= area.numQueues()) {
            throw new VhostUserProtocolException(request, "index", v.index, "the inflight area has regions for "
                    + area.numQueues() + " queues only");
        }
        if (area.format() != format()) {
            throw new VhostUserProtocolException(request, "features", features, "rings are " + format()
                    + " but the inflight area was set up for " + area.format() + " rings");
        }
        // QEMU asks for the area with its queue-size property, and the guest's driver may choose a smaller ring
        // (virtio lets it write a smaller QUEUE_SIZE; Linux halves it when it cannot allocate the ring): such a ring
        // records in the first entries of its region, as in libvhost-user and DPDK. A larger one does not fit.
        if (v.num > area.queueSize()) {
            throw new VhostUserProtocolException(request, "vring[" + v.index + "].num", v.num,
                    "is larger than the queue size the inflight area was set up for (queue_size " + area.queueSize() + ")");
        }
        return area.region(v.index);
    }

    /**
     * The ring's three areas in {@code table}, each checked to lie inside one region and be aligned. A packed
     * ring's come in the split fields: desc = descriptor ring, avail = driver event suppression, used = device
     * event suppression.
     */
    private RingAreas ringAreas(MemoryTable table, String request, Vring v) throws VhostUserProtocolException {
        int q = v.num;
        // SET_VRING_NUM and SET_VRING_BASE were checked against the features of their day; a front-end may have
        // renegotiated the format since (SET_FEATURES is taken while the rings are stopped): check again.
        RingFormat format = format();
        if (!format.isValidQueueSize(q)) {
            throw new VhostUserProtocolException(request, "vring[" + v.index + "].num", q,
                    "is not a " + (packed() ? "packed" : "split") + " queue size: the ring format changed after SET_VRING_NUM");
        }
        if (!packed() && v.base > 0xFFFF) {
            throw new VhostUserProtocolException(request, "vring[" + v.index + "].base", v.base,
                    "a split ring base is a 16-bit index: the ring format changed after SET_VRING_BASE");
        }
        if (packed()) {
            MemorySegment ring = userArea(table, request, v, "desc", v.descAddr, PackedLayout.descRingBytes(q), PackedLayout.DESC_ALIGN);
            MemorySegment driverEvent = userArea(table, request, v, "avail", v.availAddr, PackedLayout.EVENT_SIZE, PackedLayout.EVENT_ALIGN);
            MemorySegment deviceEvent = userArea(table, request, v, "used", v.usedAddr, PackedLayout.EVENT_SIZE, PackedLayout.EVENT_ALIGN);
            return new PackedRingAreas(q, ring, driverEvent, deviceEvent);
        }
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

    /**
     * Stops the ring if it is started, keeping the available index processing would resume at as its base, and
     * gives back its slice of the inflight area (unmapped once retired and unused).
     *
     * <p>A device that pushed used entries without publishing them when its queue was taken back: they are
     * published here, with a notification if the driver asked for one. Their buffers are done (pushUsed says the
     * data is written), the driver waits for them, and the base is only right once they are counted: a state taken
     * before would skip them (core refuses to give one). The device's threads no longer touch the queue (stopQueue
     * returned), so the control thread may. If publishing faults (the front-end shrank the ring's or the area's
     * file) the queue is broken, and its state is the used position it last published. Either way the ring counts
     * as stopped and its area slice is released: a ring that stayed started would pin the area for ever.
     */
    private void stop(Vring v, String cause) {
        if (!v.isStarted()) {
            return;
        }
        device.stopQueue(v.index); // throws when a worker did not give the queue back: the ring stays started
        DeviceQueue queue = v.queue;
        try {
            if (!queue.isBroken()) {
                try {
                    queue.flushUsed(); // nothing to publish or notify for a device that published all it pushed
                } catch (InternalError e) {
                    if (!GuestMemoryFaultException.isGuestMemoryFault(e)) {
                        throw e;
                    }
                    GuestMemoryFaultException broken = new GuestMemoryFaultException(v.index, "the control thread stopping it", e);
                    queue.fail(broken);
                    QueueBroken.emit(v.index, null, broken); // no runner: the control thread stopping the ring found it
                } catch (DirtyLogOverflowException e) {
                    // the publication is made, its marks could not be: the queue broke itself, the ring stops anyway
                    LOG.warning("ring " + v.index + " broken stopping it: " + e.getMessage());
                    QueueBroken.emit(v.index, null, e);
                }
            }
            QueueState state = queue.state();
            v.base = queue instanceof PackedDeviceQueue ? state.toPackedBase() : state.nextAvail();
            RingStopped.emit(v.index, queue instanceof PackedDeviceQueue ? RingFormat.PACKED : RingFormat.SPLIT, v.num,
                    cause, v.base, state, queue.isBroken());
        } finally {
            v.started = null;
            InflightArea area = v.inflight;
            if (area != null) {
                v.inflight = null;
                area.users--;
                unmapWhenUnused(area);
            }
            DirtyLogArea logging = v.logging;
            if (logging != null) {
                v.logging = null;
                logging.users--;
                unmapWhenUnused(logging);
            }
        }
    }

    /**
     * Stops every ring, also those after one that failed to stop (a worker that did not answer): each left running
     * would be drained by nobody before the device resets; the first failure is thrown afterwards.
     */
    private void stopAll(String cause) {
        RuntimeException first = null;
        for (Vring v : vrings) {
            try {
                stop(v, cause);
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
