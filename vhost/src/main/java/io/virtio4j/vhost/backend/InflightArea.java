package io.virtio4j.vhost.backend;

import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The inflight area of PROTOCOL_F_INFLIGHT_SHMFD as mapped here: one region per queue
 * ({@link InflightLayout}), in which each started queue records the buffers it took and has not returned, so that a
 * back-end started after this one died can resubmit them. {@link #allocate} makes a fresh one (GET_INFLIGHT_FD),
 * {@link #map} maps the one a front-end gives back (SET_INFLIGHT_FD); every field of the latter is hostile input.
 *
 * <p>Rings hold slices of it while they run: the {@link VringTable} counts them ({@link #users}) and has the area
 * unmapped, through the device's {@link VirtioDevice#retire retire} path, only once it is replaced or the connection
 * is gone and no ring uses it. Control thread only, except the unmapping, which may run on any thread.
 */
final class InflightArea {
    private final Arena arena;
    private final MemorySegment area;
    private final RingFormat format;
    private final int numQueues;
    private final int queueSize;
    private final long regionBytes;
    /** Started rings that hold a slice of this area. */
    int users;
    /** Replaced or dropped: unmapped once {@link #users} is 0. */
    boolean retired;

    private InflightArea(Arena arena, MemorySegment area, RingFormat format, int numQueues, int queueSize) {
        this.arena = arena;
        this.area = area;
        this.format = format;
        this.numQueues = numQueues;
        this.queueSize = queueSize;
        this.regionBytes = InflightLayout.queueRegionBytes(format, queueSize);
    }

    /** An area that is being handed out: its mapping and the fd to send along with the reply. */
    record Allocated(InflightArea area, FileDescriptor fd) {
    }

    /**
     * A fresh, zero-filled area for {@code asked}'s queues (GET_INFLIGHT_FD) in a memfd sealed against growing and
     * shrinking (a front-end cannot shrink it under this mapping), mapped shared. The caller owns the fd.
     *
     * @throws VhostUserProtocolException naming {@code num_queues} or {@code queue_size} when the device cannot
     *         have those queues in this format, or {@code fd} when the memfd cannot be made or mapped
     */
    static Allocated allocate(String request, InflightDescription asked, RingFormat format, int maxQueues,
                              int maxQueueSize) throws VhostUserProtocolException {
        checkQueues(request, asked, format, maxQueues, maxQueueSize);
        long bytes = InflightLayout.areaBytes(format, asked.numQueues(), asked.queueSize());
        FileDescriptor fd;
        try {
            fd = Memfd.createSealed("virtio4j-inflight", bytes);
        } catch (LinuxException e) {
            throw new VhostUserProtocolException(request, "mmap_size", bytes, "cannot allocate the area: " + e.getMessage());
        }
        try {
            return new Allocated(mapped(request, fd, 0, bytes, format, asked), fd);
        } catch (VhostUserProtocolException | RuntimeException e) {
            fd.close();
            throw e;
        }
    }

    /**
     * Maps the area the front-end gives back (SET_INFLIGHT_FD) from {@code fd}, which it closes on every path. The
     * size must be the one this back-end hands out for those queues in this format, the range must lie inside the
     * file, and its offset must be a page multiple.
     *
     * <p>The file need not be sealed: DPDK (and so SPDK) allocate their areas with memfd_create without sealing,
     * or as an unlinked temporary file, and a VM whose front-end kept such an area must be able to move to this
     * back-end. A front-end that shrinks the file under the mapping faults (SIGBUS) the queue whose region it cut:
     * the region's stores are fault-safe in core, the queue's thread breaks that queue
     * ({@code GuestMemoryFaultException}) and serves on, and a start that faults reading the region is refused
     * naming it. The areas of {@link #allocate} are sealed all the same.
     */
    static InflightArea map(String request, InflightDescription given, FileDescriptor fd, RingFormat format,
                            int maxQueues, int maxQueueSize) throws VhostUserProtocolException {
        try (fd) {
            checkQueues(request, given, format, maxQueues, maxQueueSize);
            long bytes = InflightLayout.areaBytes(format, given.numQueues(), given.queueSize());
            if (given.mmapSize() != bytes) {
                throw new VhostUserProtocolException(request, "mmap_size", given.mmapSize(), "must be " + bytes
                        + ": " + given.numQueues() + " " + format + " queue regions of "
                        + InflightLayout.queueRegionBytes(format, given.queueSize()) + " bytes (queue size "
                        + given.queueSize() + ")");
            }
            // Checked before mapping, and a page multiple rather than the region alignment: the region's fields are
            // accessed atomically, so the area must be aligned, and QEMU, DPDK and libvhost-user mmap at the offset
            // as given, so an area that works with them has it page-aligned anyway.
            long offset = given.mmapOffset();
            if (offset < 0 || offset % Mmap.pageSize() != 0) {
                throw new VhostUserProtocolException(request, "mmap_offset", offset,
                        "must be a multiple of the page size (" + Mmap.pageSize() + ")");
            }
            long fileSize = FdMapping.fileSize(request, "fd", fd);
            // fileSize - bytes cannot overflow: both are non-negative
            if (bytes > fileSize || offset > fileSize - bytes) {
                throw new VhostUserProtocolException(request, "mmap_offset", offset, "mmap_offset + mmap_size ("
                        + bytes + ") runs past the end of the fd (" + fileSize + " bytes)");
            }
            return mapped(request, fd, offset, bytes, format, given);
        }
    }

    private static InflightArea mapped(String request, FileDescriptor fd, long offset, long bytes, RingFormat format,
                                       InflightDescription d) throws VhostUserProtocolException {
        return FdMapping.mapShared(request, "fd", fd, offset, bytes,
                (arena, area) -> new InflightArea(arena, area, format, d.numQueues(), d.queueSize()));
    }

    private static void checkQueues(String request, InflightDescription d, RingFormat format, int maxQueues,
                                    int maxQueueSize) throws VhostUserProtocolException {
        if (d.numQueues() < 1 || d.numQueues() > maxQueues) {
            throw new VhostUserProtocolException(request, "num_queues", d.numQueues(),
                    "must be in [1, " + maxQueues + "], the queues of this device");
        }
        if (!format.isValidQueueSize(d.queueSize()) || d.queueSize() > maxQueueSize) {
            throw new VhostUserProtocolException(request, "queue_size", d.queueSize(), "is not a " + format
                    + " queue size of this device (at most " + maxQueueSize + ")");
        }
    }

    RingFormat format() {
        return format;
    }

    int numQueues() {
        return numQueues;
    }

    int queueSize() {
        return queueSize;
    }

    long byteSize() {
        return area.byteSize();
    }

    /**
     * Queue {@code index}'s region: exactly {@link InflightLayout#queueRegionBytes} bytes for the area's queue size,
     * which a ring of that size or smaller records in (core takes the ring's entries from its start).
     */
    MemorySegment region(int index) {
        return area.asSlice(index * regionBytes, regionBytes);
    }

    /** Unmaps the area: only once no thread may touch it (see {@link VirtioDevice#retire}); any thread. */
    void unmap() {
        arena.close();
    }
}
