package io.virtio4j.vhost.frontend;

import io.virtio4j.os.Errno;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A driver's guest memory: one memfd mapped here, handed to the back-end as one region at guest-physical address
 * {@link #guestPhysBase()} and front-end virtual address {@link #userBase()}. The two bases differ on purpose in
 * the defaults: rings are given by user address (SET_VRING_ADDR) and descriptors hold guest-physical addresses, so
 * a back-end that mixes the two translations up fails at once instead of working by accident.
 *
 * <p>Rings, indirect tables and buffers are carved from it with a bump allocator ({@link #carve}); nothing is
 * given back before {@link #close()}, which unmaps everything: a driver sizes its memory once, up front.
 *
 * <p>Carving is for set-up, by one thread; the carved memory itself is the drivers' to share as they see fit.
 */
public final class GuestMemory implements AutoCloseable {
    /** Ring areas are page-aligned, as QEMU allocates them. */
    public static final long PAGE = 4096;
    /** The huge page size assumed for MFD_HUGETLB memory (x86-64's default); sizes are rounded up to it. */
    public static final long HUGE_PAGE = 2L << 20;
    /** Guest-physical 0 and user address 0x7000_0000_0000: different on purpose (see the class comment). */
    public static final long DEFAULT_GUEST_PHYS_BASE = 0;
    public static final long DEFAULT_USER_BASE = 0x7000_0000_0000L;

    private final Arena arena = Arena.ofShared();
    private final FileDescriptor fd;
    private final MemorySegment memory;
    private final long guestPhysBase;
    private final long userBase;
    private long used;
    private boolean closed;

    private GuestMemory(String name, long size, long guestPhysBase, long userBase, boolean hugePages) {
        this.guestPhysBase = guestPhysBase;
        this.userBase = userBase;
        FileDescriptor f = hugePages ? Memfd.createHugetlb(name, size) : Memfd.create(name, size);
        try {
            this.fd = f;
            this.memory = Mmap.mapShared(f, size, arena);
        } catch (LinuxException e) {
            f.close();
            arena.close();
            if (hugePages && e.errno() == Errno.ENOMEM) {
                throw new HugePagesUnavailableException(size, e);
            }
            throw e;
        } catch (RuntimeException | Error e) {
            f.close();
            arena.close();
            throw e;
        }
    }

    /**
     * Guest memory of at least {@code size} bytes (rounded up to a page, or to {@link #HUGE_PAGE} on huge pages).
     *
     * @param name          shows in /proc/PID/maps as {@code /memfd:name}
     * @param guestPhysBase page-aligned guest-physical address of its first byte (what descriptors hold)
     * @param userBase      page-aligned front-end virtual address of its first byte (what SET_VRING_ADDR holds)
     * @param hugePages     back it with hugetlbfs pages (MFD_HUGETLB)
     * @throws HugePagesUnavailableException when huge pages were asked for and the system has too few
     * @throws IllegalArgumentException      when a base is negative or unaligned, or the size not positive
     */
    public static GuestMemory create(String name, long size, long guestPhysBase, long userBase, boolean hugePages) {
        if (guestPhysBase < 0 || userBase < 0 || guestPhysBase % PAGE != 0 || userBase % PAGE != 0) {
            throw new IllegalArgumentException("bases must be page-aligned and non-negative: guest-physical 0x"
                    + Long.toHexString(guestPhysBase) + ", user 0x" + Long.toHexString(userBase));
        }
        if (size <= 0) {
            throw new IllegalArgumentException("guest memory of " + size + " bytes");
        }
        long rounded = roundUp(size, hugePages ? HUGE_PAGE : PAGE);
        return new GuestMemory(name, rounded, guestPhysBase, userBase, hugePages);
    }

    /** {@link #create} at the default bases, on ordinary pages. */
    public static GuestMemory create(String name, long size) {
        return create(name, size, DEFAULT_GUEST_PHYS_BASE, DEFAULT_USER_BASE, false);
    }

    /** {@code v} rounded up to a multiple of {@code alignment} (a power of two). */
    public static long roundUp(long v, long alignment) {
        return Math.addExact(v, alignment - 1) & -alignment;
    }

    /**
     * Carves {@code bytes} at the next multiple of {@code alignment} (a power of two) and returns their offset.
     *
     * @throws GuestMemoryExhaustedException when they do not fit what is left
     */
    public long carve(long bytes, long alignment) {
        if (bytes <= 0 || alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("carve of " + bytes + " bytes aligned to " + alignment);
        }
        long at = roundUp(used, alignment);
        if (bytes > memory.byteSize() - at) {
            throw new GuestMemoryExhaustedException(bytes, alignment, used, memory.byteSize());
        }
        used = at + bytes;
        return at;
    }

    /** {@link #carve} as a segment of the mapping. */
    public MemorySegment carveSegment(long bytes, long alignment) {
        return memory.asSlice(carve(bytes, alignment), bytes);
    }

    /** Bytes carved so far (alignment padding included). */
    public long used() {
        return used;
    }

    /** The whole mapping. */
    public MemorySegment memory() {
        return memory;
    }

    public long size() {
        return memory.byteSize();
    }

    public FileDescriptor fd() {
        return fd;
    }

    public long guestPhysBase() {
        return guestPhysBase;
    }

    public long userBase() {
        return userBase;
    }

    /** The guest-physical address of {@code offset}. */
    public long gpa(long offset) {
        return guestPhysBase + offset;
    }

    /** The guest-physical address of the first byte of {@code s}, a slice of this memory. */
    public long gpa(MemorySegment s) {
        return guestPhysBase + offsetOf(s);
    }

    /** The front-end virtual address of the first byte of {@code s}, a slice of this memory. */
    public long user(MemorySegment s) {
        return userBase + offsetOf(s);
    }

    private long offsetOf(MemorySegment s) {
        long off = s.address() - memory.address();
        if (off < 0 || off + s.byteSize() > memory.byteSize()) {
            throw new IllegalArgumentException("segment at 0x" + Long.toHexString(s.address()) + " of " + s.byteSize()
                    + " bytes is not in guest memory");
        }
        return off;
    }

    /** The one memory region the back-end gets: the whole memfd. */
    public VhostUserFrontend.Region region() {
        return new VhostUserFrontend.Region(guestPhysBase, memory.byteSize(), userBase, 0, fd);
    }

    /** Unmaps the memory and closes the memfd; every segment carved from it becomes unusable. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            fd.close();
        } finally {
            arena.close();
        }
    }
}
