package io.virtio4j.os;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The kernel's random bytes (getrandom(2) from the urandom source: it blocks only until the pool is first
 * initialised) into native memory, allocating nothing per call: the calls are made uncaptured first and again with
 * errno captured only when they failed ({@code Native.callUncaptured} says why). One instance per thread.
 */
public final class GetRandom {
    private static final MethodHandle GETRANDOM = Native.downcallErrno("getrandom", JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT);
    private static final MethodHandle GETRANDOM_UNCAPTURED = Native.downcall("getrandom", JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT);

    /** The request in progress: where and how much (fields, so that the calls below capture nothing). */
    private long address;
    private long length;
    private final Native.Call uncaptured = st -> (long) GETRANDOM_UNCAPTURED.invokeExact(address, length, 0);
    private final Native.Call captured = st -> (long) GETRANDOM.invokeExact(st, address, length, 0);

    /**
     * Fills the first {@code len} bytes of {@code dst}, a native segment. A request over 256 bytes may be cut short
     * by a signal (getrandom(2)): the rest is asked for again.
     */
    public void fill(MemorySegment dst, long len) {
        if (!dst.isNative()) {
            throw new IllegalArgumentException("getrandom writes native memory, not " + dst);
        }
        Objects.checkFromIndexSize(0, len, dst.byteSize());
        long done = 0;
        while (done < len) {
            address = dst.address() + done;
            length = len - done;
            long n = Native.callUncaptured("getrandom", uncaptured);
            done += n >= 0 ? n : Native.call("getrandom", captured); // failed: again, to learn why (EINTR retried)
        }
    }
}
