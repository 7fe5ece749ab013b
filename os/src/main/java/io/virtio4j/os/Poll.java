package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Waits for one file descriptor to become ready (ppoll(2), so time-outs have nanosecond resolution). The
 * native buffers are allocated once, and the wait is made without errno capture (see
 * {@link Native#callUncaptured}), so waiting allocates nothing, compiled or not; one thread may wait at a time.
 */
public final class Poll {
    public static final int POLLIN = 0x001;
    public static final int POLLOUT = 0x004;
    public static final int POLLERR = 0x008;
    public static final int POLLHUP = 0x010;
    private static final int POLLNVAL = 0x020;

    private static final StructLayout POLLFD = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"), JAVA_SHORT.withName("events"), JAVA_SHORT.withName("revents"));
    private static final long FD = POLLFD.byteOffset(groupElement("fd"));
    private static final long EVENTS = POLLFD.byteOffset(groupElement("events"));
    private static final long REVENTS = POLLFD.byteOffset(groupElement("revents"));
    private static final StructLayout TIMESPEC = MemoryLayout.structLayout(
            JAVA_LONG.withName("tv_sec"), JAVA_LONG.withName("tv_nsec"));
    private static final long TV_SEC = TIMESPEC.byteOffset(groupElement("tv_sec"));
    private static final long TV_NSEC = TIMESPEC.byteOffset(groupElement("tv_nsec"));
    private static final long NANOS_PER_SECOND = 1_000_000_000L;

    private static final MethodHandle PPOLL = Native.downcallErrno("ppoll", JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS);
    private static final MethodHandle PPOLL_UNCAPTURED = Native.downcall("ppoll", JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS);

    private final FileDescriptor fd;
    private final String callName; // built once: naming the call must not allocate on every wait
    private final MemorySegment pollfd;
    private final MemorySegment timespec;
    // Built once so that await() allocates nothing; a null timespec means no time-out. The uncaptured ones are
    // the waits; the captured one only looks again, without waiting, after a wait failed, to learn why.
    private final Native.Call timed;
    private final Native.Call untimed;
    private final Native.Call lookAgain;

    /** Prepares waits for {@code events} (POLLIN, POLLOUT) on {@code fd}, which stays owned by the caller. */
    public Poll(FileDescriptor fd, int events) {
        this.fd = fd;
        this.callName = "ppoll(" + fd + ")";
        Arena arena = Arena.ofAuto(); // freed with this object, whichever thread waits
        this.pollfd = arena.allocate(POLLFD);
        this.timespec = arena.allocate(TIMESPEC);
        pollfd.set(JAVA_SHORT, EVENTS, (short) events);
        this.timed = st -> (int) PPOLL_UNCAPTURED.invokeExact(pollfd, 1L, timespec, MemorySegment.NULL);
        this.untimed = st -> (int) PPOLL_UNCAPTURED.invokeExact(pollfd, 1L, MemorySegment.NULL, MemorySegment.NULL);
        this.lookAgain = st -> (int) PPOLL.invokeExact(st, pollfd, 1L, timespec, MemorySegment.NULL);
    }

    /**
     * Waits until the descriptor is ready or {@code timeoutNanos} passes (a negative time-out waits for ever).
     *
     * @return the ready events (POLLIN, POLLOUT, POLLERR, POLLHUP bits); 0 on time-out, and also when a signal
     *         cut the wait short, so callers that need the full time-out loop on their own deadline
     * @throws LinuxException EBADF when the number is not an open descriptor (POLLNVAL), which would otherwise
     *         look ready for ever
     */
    public int await(long timeoutNanos) {
        pollfd.set(JAVA_INT, FD, fd.fd());
        Native.Call call = untimed;
        if (timeoutNanos >= 0) {
            timespec.set(JAVA_LONG, TV_SEC, timeoutNanos / NANOS_PER_SECOND);
            timespec.set(JAVA_LONG, TV_NSEC, timeoutNanos % NANOS_PER_SECOND);
            call = timed;
        }
        long ready = Native.callUncaptured(callName, call);
        if (ready < 0) {
            // The wait failed, errno unknown. Look again, captured and with a zero time-out: after a signal
            // (EINTR) that reports the readiness now, or 0, without waiting a second time; a lasting failure
            // (EINVAL, ENOMEM) fails again and throws with its errno.
            timespec.set(JAVA_LONG, TV_SEC, 0L);
            timespec.set(JAVA_LONG, TV_NSEC, 0L);
            ready = Native.call(callName, lookAgain, Errno.EINTR);
        }
        if (ready <= 0) {
            return 0;
        }
        int revents = pollfd.get(JAVA_SHORT, REVENTS) & 0xffff;
        if ((revents & POLLNVAL) != 0) {
            throw new LinuxException(callName, Errno.EBADF);
        }
        return revents;
    }
}
