package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.BiFunction;

/**
 * The steps every fd a front-end sends to be mapped goes through (memory regions, the dirty log, the inflight
 * area), in one place so that a failing fstat or mmap is refused with the same wording and no arena is left open.
 */
final class FdMapping {
    private FdMapping() {
    }

    /**
     * The file's size, the bound its offset and size fields are checked against before mapping: touching a mapped
     * page past the file's end raises SIGBUS.
     *
     * @param fdField the message field that carried the fd, named if fstat fails
     */
    static long fileSize(String request, String fdField, FileDescriptor fd) throws VhostUserProtocolException {
        try {
            return fd.size();
        } catch (LinuxException e) {
            throw new VhostUserProtocolException(request, fdField, fd.fd(), "fstat failed: " + e.getMessage());
        }
    }

    /**
     * Maps [{@code offset}, +{@code size}) of {@code fd} shared into a new shared arena and hands both to
     * {@code wrap}; the arena is closed again if the mapping or {@code wrap} fails, so a refused message leaves
     * nothing mapped. The caller checked the range against {@link #fileSize}.
     */
    static <T> T mapShared(String request, String fdField, FileDescriptor fd, long offset, long size,
                           BiFunction<Arena, MemorySegment, T> wrap) throws VhostUserProtocolException {
        Arena arena = Arena.ofShared();
        try {
            return wrap.apply(arena, Mmap.mapShared(fd, offset, size, arena));
        } catch (LinuxException e) {
            arena.close();
            throw new VhostUserProtocolException(request, fdField, fd.fd(), "mmap failed: " + e.getMessage());
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }
}
