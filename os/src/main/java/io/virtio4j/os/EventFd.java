package io.virtio4j.os;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A Linux eventfd: a 64-bit counter that writes add to and reads take (all of it, or 1 with
 * {@link #EFD_SEMAPHORE}). It is virtio's doorbell: vhost-user's kick and call file descriptors are eventfds.
 *
 * <p>Writes and reads go through a per-thread 8-byte native buffer, so any number of threads may call them, and
 * neither allocates: each is first made without capturing errno ({@link Native#callUncaptured} says why). A
 * call that failed changed nothing (an eventfd read or write moves all 8 bytes or none), so it is made again with
 * errno captured to learn why: that slower path runs only on failure (EAGAIN, EINTR, a closed descriptor).
 */
public final class EventFd implements AutoCloseable {
    /** Each read takes 1 from the counter instead of all of it. */
    public static final int EFD_SEMAPHORE = 0x1;
    /** Reads fail with EAGAIN instead of blocking while the counter is zero; needed for {@link #tryRead()}. */
    public static final int EFD_NONBLOCK = 0x800;
    /** Closed in a child process on exec; the descriptor reaches other processes only when sent. */
    public static final int EFD_CLOEXEC = 0x80000;

    private static final int KNOWN_FLAGS = EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC;
    private static final long COUNTER_BYTES = 8L;
    private static final String EVENTFD_TARGET = "anon_inode:[eventfd]";
    private static final MethodHandle EVENTFD = Native.downcallErrno("eventfd", JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle READ = Native.downcallErrno("read", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle WRITE = Native.downcallErrno("write", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle READ_UNCAPTURED = Native.downcall("read", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle WRITE_UNCAPTURED = Native.downcall("write", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);

    private final FileDescriptor fd;
    private final boolean nonBlocking;
    // Built once so that reads and writes allocate nothing: the calls and their names for error messages.
    private final String readName;
    private final String writeName;
    private final Native.Call readCall;
    private final Native.Call writeCall;
    private final Native.Call readUncapturedCall;
    private final Native.Call writeUncapturedCall;

    private EventFd(FileDescriptor fd, boolean nonBlocking) {
        this.fd = fd;
        this.nonBlocking = nonBlocking;
        this.readName = "eventfd read(" + fd + ")";
        this.writeName = "eventfd write(" + fd + ")";
        this.readCall = st -> (long) READ.invokeExact(st, fd.fd(), Native.threadWord(), COUNTER_BYTES);
        this.writeCall = st -> (long) WRITE.invokeExact(st, fd.fd(), Native.threadWord(), COUNTER_BYTES);
        this.readUncapturedCall = st -> (long) READ_UNCAPTURED.invokeExact(fd.fd(), Native.threadWord(), COUNTER_BYTES);
        this.writeUncapturedCall = st -> (long) WRITE_UNCAPTURED.invokeExact(fd.fd(), Native.threadWord(), COUNTER_BYTES);
    }

    /**
     * Creates an eventfd with counter 0.
     *
     * @param flags any of {@link #EFD_NONBLOCK}, {@link #EFD_CLOEXEC}, {@link #EFD_SEMAPHORE}
     */
    public static EventFd create(int flags) {
        if ((flags & ~KNOWN_FLAGS) != 0) {
            throw new IllegalArgumentException("unknown eventfd flags 0x" + Integer.toHexString(flags & ~KNOWN_FLAGS));
        }
        int n = (int) Native.call("eventfd", st -> (int) EVENTFD.invokeExact(st, 0, flags));
        return new EventFd(FileDescriptor.adopt(n), (flags & EFD_NONBLOCK) != 0);
    }

    /**
     * Takes over an eventfd received from a peer (a vhost-user kick or call fd), switching it to non-blocking
     * mode so {@link #tryRead()} works after a poll. The peer's word is not taken for it: a pipe, socket or file
     * sent in its place would take writes until it filled and then fail them on the thread that signals.
     *
     * @throws LinuxException EINVAL when {@code fd} is not an eventfd (it stays open: the caller owns it), or the
     *         error of making it non-blocking
     */
    public static EventFd adopt(FileDescriptor fd) {
        String target = target(fd);
        if (!EVENTFD_TARGET.equals(target)) {
            throw new LinuxException("adopt " + fd + " (" + target + ") as an eventfd", Errno.EINVAL);
        }
        fd.makeNonBlocking();
        return new EventFd(fd, true);
    }

    /** What {@code fd} is, as /proc/self/fd tells: {@value #EVENTFD_TARGET} for an eventfd. */
    private static String target(FileDescriptor fd) {
        try {
            return Files.readSymbolicLink(Path.of("/proc/self/fd", Integer.toString(fd.fd()))).toString();
        } catch (IOException e) {
            return "unknown: " + e.getMessage();
        }
    }

    /** The descriptor, to register with epoll or send to another process; still owned by this object. */
    public FileDescriptor fileDescriptor() {
        return fd;
    }

    public boolean isNonBlocking() {
        return nonBlocking;
    }

    /**
     * Adds {@code value} to the counter, waking readers.
     *
     * @throws LinuxException EAGAIN when the counter would pass 2^64-2 on a non-blocking eventfd (a blocking one
     *         waits for a read instead)
     */
    public void write(long value) {
        Native.threadWord().set(JAVA_LONG, 0, value);
        if (writeUncaptured() != COUNTER_BYTES) {
            Native.call(writeName, writeCall); // nothing was written: again, to learn why (or succeed after EINTR)
        }
    }

    /**
     * Adds {@code value} to the counter unless that would pass 2^64-2 on a non-blocking eventfd (EAGAIN): then
     * nothing is added and this returns false. For a notification, that is as good as done: the counter is not
     * zero, so a reader is woken all the same (and a peer that filled it on purpose is not notified any less).
     *
     * @throws LinuxException on any other failure
     */
    public boolean tryWrite(long value) {
        Native.threadWord().set(JAVA_LONG, 0, value);
        // Again on failure, to learn why (or succeed after EINTR); EAGAIN is an answer, not an error.
        return writeUncaptured() == COUNTER_BYTES || Native.call(writeName, writeCall, Errno.EAGAIN) >= 0;
    }

    /** Waits until the counter is non-zero, then takes it (or 1 of it in semaphore mode) and returns that. */
    public long read() {
        if (!nonBlocking) {
            if (readUncaptured() != COUNTER_BYTES) {
                Native.call(readName, readCall); // nothing was read: again, to learn why (or succeed after EINTR)
            }
            return Native.threadWord().get(JAVA_LONG, 0);
        }
        Poll readable = null;
        long value;
        while ((value = tryRead()) == 0) {
            if (readable == null) {
                readable = new Poll(fd, Poll.POLLIN);
            }
            readable.await(-1);
        }
        return value;
    }

    /**
     * Takes the counter (or 1 of it in semaphore mode) without waiting.
     *
     * @return the value taken, 0 when the counter was zero
     * @throws IllegalStateException on an eventfd made without {@link #EFD_NONBLOCK}, where a read would block
     */
    public long tryRead() {
        if (!nonBlocking) {
            throw new IllegalStateException("tryRead needs an eventfd created with EFD_NONBLOCK: " + fd);
        }
        if (readUncaptured() != COUNTER_BYTES && Native.call(readName, readCall, Errno.EAGAIN) < 0) {
            return 0; // nothing was read, and the second look found the counter still zero
        }
        return Native.threadWord().get(JAVA_LONG, 0);
    }

    /** read(2) of the counter into the thread's word, errno not captured: 8, or a failure to look into. */
    private long readUncaptured() {
        return Native.callUncaptured(readName, readUncapturedCall);
    }

    /** write(2) of the thread's word to the counter, errno not captured: 8, or a failure to look into. */
    private long writeUncaptured() {
        return Native.callUncaptured(writeName, writeUncapturedCall);
    }

    @Override
    public void close() {
        fd.close();
    }

    @Override
    public String toString() {
        return "eventfd(" + fd + ")";
    }
}
