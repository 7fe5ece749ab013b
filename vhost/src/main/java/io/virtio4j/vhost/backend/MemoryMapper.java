package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.memory.MemoryRegion;
import io.virtio4j.vhost.memory.MemoryTable;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.MemoryTableDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Owns the front-end's memory as mapped here: the current {@link MemoryTable} and one arena per mapped region
 * (so REM_MEM_REG can unmap one). A table change happens in two steps: {@code map*}/{@link #removal} prepare a
 * {@link Change} (new regions mapped, nothing installed yet), the {@link VringTable} checks it against the
 * started rings and {@link Change#install() installs} it; a change closed without being installed unmaps what
 * it mapped. Control thread only.
 *
 * <p>A region maps only its own pages: from its mmap_offset rounded down to the fd's page size (the huge page size
 * on hugetlbfs) to its end rounded up, with MAP_NORESERVE (see {@link Mmap#mapSharedNoReserve}); its segment is the
 * exact range. A file shrunk after this is survived where the memory is touched (see QueueRunner and VringTable).
 */
final class MemoryMapper implements AutoCloseable {
    private final int maxMemSlots;
    private MemoryTable table = MemoryTable.empty();
    private final Map<MemoryRegion, Arena> arenas = new IdentityHashMap<>();

    MemoryMapper(int maxMemSlots) {
        this.maxMemSlots = maxMemSlots;
    }

    MemoryTable table() {
        return table;
    }

    int maxMemSlots() {
        return maxMemSlots;
    }

    /** A table replacing the whole current one (SET_MEM_TABLE); maps every region from its fd in {@code m}. */
    Change mapTable(Message m, MemoryTableDescription description) throws VhostUserProtocolException {
        int n = description.regions().size();
        if (m.fdCount() != n) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(), "must be one per region (" + n + ")");
        }
        return prepare(new Change(List.copyOf(arenas.keySet()), MemoryTable.empty()), c -> {
            for (int i = 0; i < n; i++) {
                c.map(m.name(), "regions[" + i + "]", description.regions().get(i), m.takeFd(i), c.next);
            }
        });
    }

    /** The current table with one more region (ADD_MEM_REG), mapped from the one fd in {@code m}. */
    Change mapAdded(Message m, MemoryRegionDescription region) throws VhostUserProtocolException {
        if (m.fdCount() != 1) {
            throw new VhostUserProtocolException(m.name(), "fds", m.fdCount(), "exactly one descriptor must come with it");
        }
        if (table.regions().size() >= maxMemSlots) {
            throw new VhostUserProtocolException(m.name(), "regions", table.regions().size(),
                    "all " + maxMemSlots + " memory slots are in use");
        }
        return prepare(new Change(List.of(), table), c -> c.map(m.name(), "region", region, m.takeFd(0), table));
    }

    /** What a change maps, step by step. */
    @FunctionalInterface
    private interface Mapping {
        void mapInto(Change c) throws VhostUserProtocolException;
    }

    /** {@code c} once {@code mapping} has mapped into it; on any failure what it mapped so far is unmapped. */
    private static Change prepare(Change c, Mapping mapping) throws VhostUserProtocolException {
        try {
            mapping.mapInto(c);
            return c;
        } catch (VhostUserProtocolException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** The current table without the region of these addresses and size (REM_MEM_REG; its mmap_offset is ignored). */
    Change removal(String request, MemoryRegionDescription region) throws VhostUserProtocolException {
        for (MemoryRegion r : table.regions()) {
            if (r.guestPhysAddr() == region.guestPhysAddr() && r.size() == region.memorySize()
                    && r.userAddr() == region.userspaceAddr()) {
                List<MemoryRegion> regions = new ArrayList<>(table.regions());
                regions.remove(r);
                return new Change(List.of(r), new MemoryTable(regions));
            }
        }
        throw new VhostUserProtocolException(request, "region.guest_phys_addr", region.guestPhysAddr(),
                "no mapped region has this address, size 0x" + Long.toHexString(region.memorySize())
                        + " and user address 0x" + Long.toHexString(region.userspaceAddr()));
    }

    /** Unmaps everything: the connection is gone and no ring is started. */
    @Override
    public void close() {
        release().run();
    }

    /**
     * Forgets every mapping (the table is empty from now on) and returns what unmaps them, for the caller to run
     * once nothing may touch them any more (see {@link VirtioDevice#retire}); safe to run from any thread.
     */
    Runnable release() {
        List<Arena> retired = List.copyOf(arenas.values());
        table = MemoryTable.empty();
        arenas.clear();
        return () -> retired.forEach(Arena::close);
    }

    /** A prepared table: {@link #next()} is what {@link #install()} makes current. */
    final class Change implements AutoCloseable {
        private final Map<MemoryRegion, Arena> mapped = new IdentityHashMap<>();
        private final List<MemoryRegion> unmap;
        private MemoryTable next;
        private boolean installed;

        private Change(List<MemoryRegion> unmap, MemoryTable start) {
            this.unmap = unmap;
            this.next = start;
        }

        MemoryTable next() {
            return next;
        }

        /**
         * Makes {@link #next()} the current table and forgets the regions it no longer has; returns what unmaps
         * them, for the caller to run once nothing may touch them (see {@link VirtioDevice#retire}).
         */
        Runnable install() {
            table = next;
            arenas.putAll(mapped);
            List<Arena> retired = new ArrayList<>();
            for (MemoryRegion r : unmap) {
                Arena a = arenas.remove(r);
                if (a != null) {
                    retired.add(a);
                }
            }
            installed = true;
            return () -> retired.forEach(Arena::close);
        }

        /** Unmaps what this change mapped, unless it was installed. */
        @Override
        public void close() {
            if (!installed) {
                mapped.values().forEach(Arena::close);
                mapped.clear();
            }
        }

        /**
         * Maps {@code region} from {@code fd} (closed on every path) and adds it to {@link #next}; refused when it
         * overlaps a region of {@code existing} or reaches past the end of the fd. The mapping belongs to this
         * change only once {@link #next} holds it: a failure before that unmaps it here.
         */
        private void map(String request, String field, MemoryRegionDescription region, FileDescriptor fd,
                         MemoryTable existing) throws VhostUserProtocolException {
            try (fd) {
                long size = region.memorySize();
                long mmapOffset = region.mmapOffset();
                if (existing.overlapsGuest(region.guestPhysAddr(), size)) {
                    throw new VhostUserProtocolException(request, field + ".guest_phys_addr", region.guestPhysAddr(),
                            "overlaps a region already in the table " + existing);
                }
                if (existing.overlapsUser(region.userspaceAddr(), size)) {
                    throw new VhostUserProtocolException(request, field + ".userspace_addr", region.userspaceAddr(),
                            "overlaps a region already in the table " + existing);
                }
                long fileSize = FdMapping.fileSize(request, field + ".fd", fd);
                if (Long.compareUnsigned(mmapOffset, fileSize) > 0 || Long.compareUnsigned(size, fileSize - mmapOffset) > 0) {
                    // Touching a mapped page past the end of its file raises SIGBUS (an InternalError here): refused
                    // up front. A front-end that shrinks the file later is the worker's to survive (QueueRunner).
                    throw new VhostUserProtocolException(request, field + ".memory_size", size, "mmap_offset 0x"
                            + Long.toHexString(mmapOffset) + " + memory_size runs past the end of the fd (" + fileSize
                            + " bytes)");
                }
                Arena arena = Arena.ofShared();
                try {
                    MemorySegment data;
                    try {
                        // Only the region's own pages, from mmap_offset rounded down to the fd's page size (the huge
                        // page size on hugetlbfs, where mmap requires it), not the whole file before it; reserving
                        // nothing: the front-end owns this memory.
                        data = Mmap.mapSharedNoReserve(fd, mmapOffset, size, arena);
                    } catch (LinuxException e) {
                        throw new VhostUserProtocolException(request, field + ".fd", fd.fd(), "mmap failed: " + e.getMessage());
                    }
                    MemoryRegion r = new MemoryRegion(region.guestPhysAddr(), size, region.userspaceAddr(), mmapOffset,
                            data);
                    List<MemoryRegion> regions = new ArrayList<>(next.regions());
                    regions.add(r);
                    MemoryTable grown = new MemoryTable(regions);
                    mapped.put(r, arena);
                    next = grown;
                } catch (VhostUserProtocolException | RuntimeException e) {
                    arena.close();
                    throw e;
                }
            }
        }
    }
}
