package io.virtio4j.vhost.backend;

import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.vhost.protocol.LogDescription;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;

import java.lang.foreign.Arena;

/**
 * The dirty log a front-end hands over with SET_LOG_BASE (PROTOCOL_F_LOG_SHMFD), mapped shared: rings started with
 * logging on mark in it ({@link DirtyLog}). Its size and offset are hostile input, checked against the fd's size.
 *
 * <p>As with the inflight area, rings hold it while they run: the {@link VringTable} counts them ({@link #users})
 * and has it unmapped through the device's {@link VirtioDevice#retire retire} path once it is replaced (a new
 * SET_LOG_BASE, QEMU's answer to a memory hot-plug) or the connection is gone and no ring uses it. Control thread
 * only, except the unmapping.
 */
final class DirtyLogArea {
    private final Arena arena;
    private final DirtyLog log;
    /** Started rings that log in this area. */
    int users;
    /** Replaced or dropped: unmapped once {@link #users} is 0. */
    boolean retired;

    private DirtyLogArea(Arena arena, DirtyLog log) {
        this.arena = arena;
        this.log = log;
    }

    /**
     * Maps the log {@code given} describes in {@code fd}, which it closes on every path: {@code mmap_size} bytes from
     * {@code mmap_offset}, which must lie inside the file. The file is not required to be sealed (QEMU seals its log,
     * other front-ends need not): one shrunk under the mapping faults the queue that marks in it, which breaks that
     * queue as any guest memory fault does.
     *
     * @throws VhostUserProtocolException naming {@code mmap_size} (0), {@code mmap_offset} (past the file's end) or
     *         {@code fd} (not a file that can be mapped)
     */
    static DirtyLogArea map(String request, LogDescription given, FileDescriptor fd) throws VhostUserProtocolException {
        try (fd) {
            long size = given.mmapSize();
            long offset = given.mmapOffset();
            if (size == 0) {
                throw new VhostUserProtocolException(request, "mmap_size", 0, "an empty log logs nothing");
            }
            long fileSize = FdMapping.fileSize(request, "fd", fd);
            // Unsigned fields: a value with the top bit set reads negative and is past any file. fileSize - size
            // cannot overflow once size <= fileSize (both non-negative).
            if (size < 0 || size > fileSize) {
                throw new VhostUserProtocolException(request, "mmap_size", size, "is more than the fd's "
                        + fileSize + " bytes");
            }
            if (offset < 0 || offset > fileSize - size) {
                throw new VhostUserProtocolException(request, "mmap_offset", offset, "mmap_offset + mmap_size ("
                        + size + ") runs past the end of the fd (" + fileSize + " bytes)");
            }
            // Whole 32-bit words around the log (the atomic OR works on them, see DirtyLog): from the offset rounded
            // down to 4 to its end rounded up to 4. The extra bytes are in the log's pages, which mmap maps whole, so
            // they are never past what the file covers; no bit of them is ever set.
            long from = offset & ~3L;
            long to = ((offset + size) + 3) & ~3L;
            return FdMapping.mapShared(request, "fd", fd, from, to - from,
                    (arena, words) -> new DirtyLogArea(arena, new DirtyLog(words, offset - from, size)));
        }
    }

    DirtyLog log() {
        return log;
    }

    /** Unmaps the log: only once no thread may touch it (see {@link VirtioDevice#retire}); any thread. */
    void unmap() {
        arena.close();
    }
}
