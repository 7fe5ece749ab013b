package io.virtio4j.os;

import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * An owned Linux file descriptor: closed exactly once, by {@link #close()}, unless {@link #release() released}.
 *
 * <p>Closing while another thread still uses the number is the caller's race to avoid, as with any fd: the
 * kernel may hand the same number to the next open.
 */
public final class FileDescriptor implements AutoCloseable {
    private static final int CLOSED = -1;
    private static final MethodHandle CLOSE = Native.downcallErrno("close", JAVA_INT, JAVA_INT);

    private final AtomicInteger fd;
    /** The number this object owned, kept for messages after close. */
    private final int number;

    private FileDescriptor(int fd) {
        this.fd = new AtomicInteger(fd);
        this.number = fd;
    }

    /** Takes ownership of {@code fd}: the returned object closes it. */
    public static FileDescriptor adopt(int fd) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd);
        }
        return new FileDescriptor(fd);
    }

    /**
     * The descriptor number.
     *
     * @throws FileDescriptorClosedException after {@link #close()} or {@link #release()}
     */
    public int fd() {
        int v = fd.get();
        if (v == CLOSED) {
            throw new FileDescriptorClosedException(number);
        }
        return v;
    }

    public boolean isOpen() {
        return fd.get() != CLOSED;
    }

    /**
     * Hands the raw number over to the caller, who must close it; this object no longer owns it.
     *
     * @throws FileDescriptorClosedException when already closed or released
     */
    public int release() {
        int v = fd.getAndSet(CLOSED);
        if (v == CLOSED) {
            throw new FileDescriptorClosedException(number);
        }
        return v;
    }

    /** Closes the descriptor the first time; later calls do nothing. */
    @Override
    public void close() {
        int v = fd.getAndSet(CLOSED);
        if (v != CLOSED) {
            // Linux frees the number even when close reports EINTR; retrying could close someone else's fd.
            Native.call("close(fd " + v + ")", st -> (int) CLOSE.invokeExact(st, v), Errno.EINTR);
        }
    }

    @Override
    public String toString() {
        return isOpen() ? "fd " + number : "fd " + number + " (closed)";
    }
}
