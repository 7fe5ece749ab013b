package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.Objects;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * An epoll instance: register descriptors with an events mask and 64-bit user data, then wait for ready ones.
 * {@link #await} fills a buffer allocated once, read back with {@link #events(int)} and {@link #data(int)}, so
 * waiting does not allocate. One thread may wait at a time; registration may happen on any thread.
 */
public final class Epoll implements AutoCloseable {
    public static final int EPOLLIN = 0x001;
    public static final int EPOLLOUT = 0x004;
    public static final int EPOLLERR = 0x008;
    public static final int EPOLLHUP = 0x010;
    public static final int EPOLLRDHUP = 0x2000;
    public static final int EPOLLONESHOT = 1 << 30;
    public static final int EPOLLET = 1 << 31;

    private static final int EPOLL_CLOEXEC = 0x80000;
    private static final int EPOLL_CTL_ADD = 1;
    private static final int EPOLL_CTL_DEL = 2;
    private static final int EPOLL_CTL_MOD = 3;

    // struct epoll_event is packed on x86-64 (the 8-byte data follows the 4-byte mask at offset 4, 12 bytes in
    // all); elsewhere, e.g. aarch64, data is 8-byte aligned and the struct is 16 bytes.
    private static final StructLayout EVENT = "amd64".equals(System.getProperty("os.arch"))
            ? MemoryLayout.structLayout(JAVA_INT.withName("events"), JAVA_LONG_UNALIGNED.withName("data"))
            : MemoryLayout.structLayout(JAVA_INT.withName("events"), MemoryLayout.paddingLayout(4),
                    JAVA_LONG.withName("data"));
    private static final long EVENTS = EVENT.byteOffset(groupElement("events"));
    private static final long DATA = EVENT.byteOffset(groupElement("data"));

    private static final MethodHandle CREATE = Native.downcallErrno("epoll_create1", JAVA_INT, JAVA_INT);
    private static final MethodHandle CTL = Native.downcallErrno("epoll_ctl", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle WAIT = Native.downcallErrno("epoll_wait", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
    // Waits and registrations are made without errno capture (Native.callUncaptured says why), and again captured
    // only when they failed, to learn why: a failed epoll_ctl changed nothing, and a failed wait is looked at again
    // without waiting.
    private static final MethodHandle CTL_UNCAPTURED = Native.downcall("epoll_ctl", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
            ADDRESS);
    private static final MethodHandle WAIT_UNCAPTURED = Native.downcall("epoll_wait", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT,
            JAVA_INT);

    private final FileDescriptor epfd;
    private final MemorySegment ready;
    // Built once so that await() allocates nothing; the calls read the time-out from the field.
    private final String waitName;
    private final Native.Call waitCall;
    private final Native.Call waitUncaptured;
    private int timeoutMillis;
    private int count;

    private Epoll(FileDescriptor epfd, int capacity) {
        this.epfd = epfd;
        this.ready = Arena.ofAuto().allocate(EVENT, capacity);
        this.waitName = "epoll_wait(" + epfd + ")";
        this.waitCall = st -> (int) WAIT.invokeExact(st, epfd.fd(), ready, capacity, timeoutMillis);
        this.waitUncaptured = st -> (int) WAIT_UNCAPTURED.invokeExact(epfd.fd(), ready, capacity, timeoutMillis);
    }

    /**
     * Creates a close-on-exec epoll instance.
     *
     * @param maxEvents how many ready descriptors one {@link #await} reports at most
     */
    public static Epoll create(int maxEvents) {
        if (maxEvents <= 0) {
            throw new IllegalArgumentException("maxEvents must be positive: " + maxEvents);
        }
        int n = (int) Native.call("epoll_create1", st -> (int) CREATE.invokeExact(st, EPOLL_CLOEXEC));
        return new Epoll(FileDescriptor.adopt(n), maxEvents);
    }

    /** Watches {@code fd} for {@code events} (EPOLLIN, ...); {@link #data(int)} reports {@code data} for it. */
    public void add(FileDescriptor fd, int events, long data) {
        control("epoll_ctl(ADD, ", EPOLL_CTL_ADD, fd, events, data);
    }

    /** Changes the events mask and user data of a watched {@code fd}. */
    public void modify(FileDescriptor fd, int events, long data) {
        control("epoll_ctl(MOD, ", EPOLL_CTL_MOD, fd, events, data);
    }

    /** Stops watching {@code fd}. */
    public void delete(FileDescriptor fd) {
        control("epoll_ctl(DEL, ", EPOLL_CTL_DEL, fd, 0, 0);
    }

    /**
     * The arguments of one thread's epoll_ctl calls: a native event and a call object that reads them, built
     * once per thread, so registering and re-registering (which the tap back-end does around every drain of its
     * tap) allocates nothing.
     */
    private static final class CtlArgs {
        final MemorySegment event = Arena.ofAuto().allocate(EVENT);
        int epfd;
        int op;
        int target;
        final Native.Call call = st -> (int) CTL.invokeExact(st, epfd, op, target, event);
        final Native.Call uncaptured = st -> (int) CTL_UNCAPTURED.invokeExact(epfd, op, target, event);
    }

    private static final ThreadLocal<CtlArgs> CTL_ARGS = ThreadLocal.withInitial(CtlArgs::new);

    private void control(String name, int op, FileDescriptor fd, int events, long data) {
        CtlArgs c = CTL_ARGS.get();
        c.epfd = epfd.fd();
        c.op = op;
        c.target = fd.fd();
        c.event.set(JAVA_INT, EVENTS, events);
        c.event.set(JAVA_LONG_UNALIGNED, DATA, data);
        if (Native.callUncaptured("epoll_ctl", c.uncaptured) >= 0) {
            return;
        }
        try {
            Native.call("epoll_ctl", c.call); // it failed and changed nothing: again, to learn why
        } catch (LinuxException e) {
            // The message names the operation and descriptor; built only on this path.
            throw new LinuxException(name + fd + ")", e.errno());
        }
    }

    /**
     * Waits until a watched descriptor is ready or {@code timeoutMillis} passes (-1 waits for ever, 0 only
     * looks).
     *
     * @return how many descriptors are ready, also {@link #count()}; 0 on time-out, and also when a signal cut
     *         the wait short
     */
    public int await(int timeoutMillis) {
        this.timeoutMillis = timeoutMillis;
        long n = Native.callUncaptured(waitName, waitUncaptured);
        if (n < 0) {
            // The wait failed, errno unknown: look again, captured and without waiting. After a signal (EINTR)
            // that reports what is ready now, or 0; a lasting failure (EBADF, EINVAL) fails again and throws.
            this.timeoutMillis = 0;
            n = Native.call(waitName, waitCall, Errno.EINTR);
        }
        count = (int) Math.max(0, n);
        return count;
    }

    /** How many ready descriptors the last {@link #await} reported. */
    public int count() {
        return count;
    }

    /** The ready events (EPOLLIN, EPOLLHUP, ...) of the {@code index}-th ready descriptor. */
    public int events(int index) {
        return ready.get(JAVA_INT, offset(index) + EVENTS);
    }

    /** The user data registered for the {@code index}-th ready descriptor. */
    public long data(int index) {
        return ready.get(JAVA_LONG_UNALIGNED, offset(index) + DATA);
    }

    private long offset(int index) {
        return Objects.checkIndex(index, count) * EVENT.byteSize();
    }

    public FileDescriptor fileDescriptor() {
        return epfd;
    }

    @Override
    public void close() {
        epfd.close();
    }
}
