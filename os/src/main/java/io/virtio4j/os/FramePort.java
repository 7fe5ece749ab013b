package io.virtio4j.os;

import java.lang.foreign.MemorySegment;

/**
 * A non-blocking descriptor that carries whole frames, one per read or write: a tap device ({@link TunTap}), or,
 * where a test needs a peer that pushes back, one end of a datagram socket pair ({@link DatagramPair}).
 *
 * <p>Reads and writes report the kernel's "not now" (EAGAIN) and a refused frame as a negative errno instead of
 * throwing, and allocate nothing: they are per-frame operations. Each direction may be used by one thread at a
 * time (the calls keep their arguments in fields so that they need no lambda capture).
 */
public interface FramePort extends AutoCloseable {
    /** The descriptor, to register with {@link Epoll}; still owned by the port. */
    FileDescriptor fileDescriptor();

    /**
     * Reads the next frame into {@code buffer}.
     *
     * @return the frame's length (a longer frame is cut to {@code capacity}, the rest is lost), or
     *         {@code -Errno.EAGAIN} when none is waiting, or another negated errno
     */
    long read(MemorySegment buffer, long capacity);

    /**
     * Writes the first {@code length} bytes of {@code frame} as one frame.
     *
     * @return {@code length}, or {@code -Errno.EAGAIN} when the port cannot take it now (wait for EPOLLOUT),
     *         or another negated errno when the kernel refused the frame
     */
    long write(MemorySegment frame, long length);

    /** A name for messages: the interface name of a tap. */
    String name();

    @Override
    void close();
}
