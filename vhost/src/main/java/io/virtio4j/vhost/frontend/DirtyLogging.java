package io.virtio4j.vhost.frontend;

import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;

import static io.virtio4j.vhost.protocol.ProtocolFeatures.bit;

/**
 * A front-end's dirty-page logging over a {@link FrontendSession}, as a VMM runs it around a live migration: a log
 * sized for the session's guest memory in a sealed memfd shared with the back-end (SET_LOG_BASE), VHOST_F_LOG_ALL
 * added to the features (SET_FEATURES) and the log flag set on every ring with its used ring's guest-physical
 * address (SET_VRING_ADDR), the rings running throughout; {@link #takeDirtyPages} reads and clears the log as a
 * migration's passes do, {@link #stop} switches logging off again. Both in QEMU's order ({@code vhost_dev_set_log}:
 * features, then the rings).
 *
 * <p>Not thread-safe; the log itself may be read while the back-end writes it (atomic OR there, atomic AND-NOT
 * here).
 */
public final class DirtyLogging implements AutoCloseable {
    private final FrontendSession session;
    private final Arena arena;
    private final FileDescriptor fd;
    private final DirtyLog log;
    private boolean logging;

    private DirtyLogging(FrontendSession session, FileDescriptor fd, Arena arena, DirtyLog log) {
        this.session = session;
        this.arena = arena;
        this.fd = fd;
        this.log = log;
    }

    /**
     * Starts logging on the session's started device: needs LOG_SHMFD negotiated (ask for it in
     * {@link FrontendSession#negotiate}; {@link FrontendSession#PROTOCOL_FEATURES} does) and VHOST_F_LOG_ALL
     * offered.
     *
     * @throws IllegalStateException when either is missing
     */
    public static DirtyLogging start(FrontendSession session) {
        if (!session.hasProtocol(ProtocolFeatures.LOG_SHMFD)) {
            throw new IllegalStateException("LOG_SHMFD was not negotiated");
        }
        if ((session.frontend().getFeatures() & bit(ProtocolFeatures.VHOST_F_LOG_ALL)) == 0) {
            throw new IllegalStateException("the back-end does not offer VHOST_F_LOG_ALL");
        }
        GuestMemory m = session.memory();
        long bytes = DirtyLog.bytesCovering(m.guestPhysBase() + m.size());
        long fileBytes = GuestMemory.roundUp(bytes, GuestMemory.PAGE);
        FileDescriptor fd = Memfd.createSealed("virtio4j-dirty-log", fileBytes);
        Arena arena = Arena.ofShared();
        DirtyLogging l;
        try {
            l = new DirtyLogging(session, fd, arena, new DirtyLog(Mmap.mapShared(fd, 0, fileBytes, arena), 0, bytes));
        } catch (RuntimeException e) {
            arena.close();
            fd.close();
            throw e;
        }
        try {
            l.on();
        } catch (RuntimeException e) {
            l.close();
            throw e;
        }
        return l;
    }

    private void on() {
        VhostUserFrontend fe = session.frontend();
        fe.setLogBase(fd, log.byteSize(), 0);
        fe.setFeatures(session.features() | bit(ProtocolFeatures.VHOST_F_LOG_ALL));
        logging = true;
        ringFlags(true);
    }

    /** The log as the back-end sees it (for reading it page by page). */
    public DirtyLog log() {
        return log;
    }

    /** The pages marked since the last call, each cleared as it is read (a page marked meanwhile stays or is here). */
    public BitSet takeDirtyPages() {
        BitSet dirty = new BitSet();
        for (long p = 0; p < log.pages(); p++) {
            if (log.testAndClear(p)) {
                dirty.set(Math.toIntExact(p));
            }
        }
        return dirty;
    }

    /**
     * Switches logging off in QEMU's order, as for the start ({@code vhost_dev_set_log(false)}): VHOST_F_LOG_ALL
     * cleared first (the rings restart unlogged with their log flag still set), then the rings' log flags; the log
     * stays readable.
     */
    public void stop() {
        if (!logging) {
            return;
        }
        logging = false;
        session.frontend().setFeatures(session.features());
        ringFlags(false);
    }

    /**
     * SET_VRING_ADDR with the log flag set or cleared on every ring, the areas unchanged, with the log address as
     * QEMU gives it: the used ring's guest-physical address (for a packed ring, the device event area's, which QEMU
     * keeps as its "used" address).
     */
    private void ringFlags(boolean on) {
        GuestMemory m = session.memory();
        VhostUserFrontend fe = session.frontend();
        for (DriverRing r : session.rings()) {
            switch (r.areas()) {
                case SplitRingAreas a -> fe.setVringAddr(r.index(), m.user(a.descTable()), m.user(a.usedRing()),
                        m.user(a.availRing()), on, m.gpa(a.usedRing()));
                case PackedRingAreas a -> fe.setVringAddr(r.index(), m.user(a.descRing()), m.user(a.deviceEvent()),
                        m.user(a.driverEvent()), on, m.gpa(a.deviceEvent()));
            }
        }
    }

    /** Stops logging if it is on (when connected), unmaps the log and closes its fd. */
    @Override
    public void close() {
        try {
            if (logging && session.connected()) {
                stop();
            }
        } finally {
            fd.close();
            arena.close();
        }
    }
}
