package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Downcall plumbing: looks up libc symbols and captures errno. A handle from {@link #downcallErrno} takes a
 * leading {@code MemorySegment} for the captured state; {@link #call}, the one place errno is checked, supplies
 * the calling thread's, retries on EINTR and turns a failure into a {@link LinuxException}.
 */
final class Native {
    private Native() {
    }

    /** A downcall whose negative result means failure with errno in the captured state. */
    @FunctionalInterface
    interface Call {
        long invoke(MemorySegment errnoState) throws Throwable;
    }

    /** Passed as {@code acceptedErrno} when every failure must throw; no errno is zero. */
    private static final int NO_ERRNO = 0;

    static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    // Per-thread native memory, so that calls on any thread need neither a lock nor an allocation. Auto arenas
    // give the memory back when a thread ends.
    private static final ThreadLocal<MemorySegment> STATE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));
    private static final ThreadLocal<MemorySegment> WORD =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(JAVA_LONG));

    /** ioctl(int fd, unsigned long request, ...) with one pointer argument: variadic from the third. */
    static final MethodHandle IOCTL = downcallErrno("ioctl", Linker.Option.firstVariadicArg(2),
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, JAVA_LONG, ValueLayout.ADDRESS);

    static MethodHandle downcall(String name, ValueLayout result, ValueLayout... args) {
        FunctionDescriptor fd = result == null ? FunctionDescriptor.ofVoid(args) : FunctionDescriptor.of(result, args);
        return LINKER.downcallHandle(symbol(name), fd);
    }

    /**
     * A variadic C function whose errno is not captured ({@code variadic} is {@code Linker.Option.firstVariadicArg(n)}):
     * for a hot call made first without capture, and again with {@link #downcallErrno} only when it failed.
     */
    static MethodHandle downcall(String name, Linker.Option variadic, ValueLayout result, ValueLayout... args) {
        return LINKER.downcallHandle(symbol(name), FunctionDescriptor.of(result, args), variadic);
    }

    static MethodHandle downcallErrno(String name, ValueLayout result, ValueLayout... args) {
        return LINKER.downcallHandle(symbol(name), FunctionDescriptor.of(result, args), CAPTURE_ERRNO);
    }

    /** A variadic C function: {@code variadic} is {@code Linker.Option.firstVariadicArg(n)}. */
    static MethodHandle downcallErrno(String name, Linker.Option variadic, ValueLayout result, ValueLayout... args) {
        return LINKER.downcallHandle(symbol(name), FunctionDescriptor.of(result, args), CAPTURE_ERRNO, variadic);
    }

    private static MemorySegment symbol(String name) {
        return LINKER.defaultLookup().find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no symbol " + name));
    }

    private static MemorySegment errnoState() {
        return STATE.get();
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** An 8-byte native word owned by the calling thread: the buffer of eventfd reads and writes. */
    static MemorySegment threadWord() {
        return WORD.get();
    }

    /**
     * Runs an errno-capturing downcall, retrying it when a signal interrupted it (EINTR).
     *
     * @param name what failed, for the exception message
     * @return the call's non-negative result
     * @throws LinuxException when the call fails
     */
    static long call(String name, Call call) {
        return call(name, call, NO_ERRNO);
    }

    /**
     * Like {@link #call(String, Call)}, but a failure with {@code acceptedErrno} is an expected outcome: it
     * returns {@code -acceptedErrno} instead of throwing. Accepting EINTR turns off the retry, for calls that
     * must not be repeated (close) or whose caller recomputes a time-out.
     */
    static long call(String name, Call call, int acceptedErrno) {
        MemorySegment state = errnoState();
        while (true) {
            long result = invoke(name, call, state);
            if (result >= 0) {
                return result;
            }
            int errno = errno(state);
            if (errno == acceptedErrno) {
                return -errno;
            }
            if (errno != Errno.EINTR) {
                throw new LinuxException(name, errno);
            }
        }
    }

    /**
     * Runs an errno-capturing downcall, retrying it on EINTR, and reports a failure as {@code -errno} instead
     * of throwing: for per-frame I/O, where EAGAIN is the normal way to say "not now" and a refused frame must
     * cost no exception, no message string and no allocation.
     *
     * @param name what was called, only for the message of an unexpected Java-level failure
     * @return the call's non-negative result, or the negated errno
     */
    static long callOrErrno(String name, Call call) {
        MemorySegment state = errnoState();
        while (true) {
            long result = invoke(name, call, state);
            if (result >= 0) {
                return result;
            }
            int errno = errno(state);
            if (errno != Errno.EINTR) {
                return -errno;
            }
        }
    }

    /**
     * Runs a downcall made without errno capture (a {@link #downcall} handle; {@code call} ignores its argument)
     * and returns its raw result, a failure included: for hot calls, which must allocate nothing on every path. The
     * JDK's errno capture slices its state segment on every call (a 40-byte object); only C2's escape analysis
     * removes that slice, and only once it has compiled and inlined the call, which a loaded machine delays for
     * seconds (and the interpreter and C1 never do). A hot caller makes the call uncaptured first and, only when it
     * failed, again through {@link #call} to learn why.
     *
     * @param name what was called, only for the message of an unexpected Java-level failure
     */
    static long callUncaptured(String name, Call call) {
        return invoke(name, call, MemorySegment.NULL);
    }

    private static long invoke(String name, Call call, MemorySegment state) {
        try {
            return call.invoke(state);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            // invokeExact declares Throwable, but a downcall itself throws nothing checked.
            throw new IllegalStateException(name + " downcall failed", t);
        }
    }
}
