package io.virtio4j.bench.jmh;

import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.ordering.Ordering;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.openjdk.jmh.infra.Blackhole;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JMH hot paths, run outside JMH on this thread: once the JIT has compiled them, a round of invocations must
 * allocate nothing (thread-allocated bytes, which is what {@code -prof gc} reports as gc.alloc.rate.norm without
 * JMH's own background allocation). Rounds repeat until the compiled code is in place, so a slow JIT on a busy
 * machine only makes the test longer.
 */
class HotPathAllocationTest {
    private static final Blackhole BH = new Blackhole(
            "Today's password is swordfish. I understand instantiating Blackholes directly is dangerous.");
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int INVOCATIONS_PER_ROUND = 10_000;
    private static final int MAX_ROUNDS = 200;

    static Stream<Arguments> params() {
        return Stream.of(Ordering.values()).flatMap(o -> Stream.of(Arguments.of(o, 1), Arguments.of(o, 64)));
    }

    /** {@link #params()} for each ring format, for the benchmarks that run on either. */
    static Stream<Arguments> formatParams() {
        return Stream.of(RingFormat.values()).flatMap(f -> params().map(a -> Arguments.of(f, a.get()[0], a.get()[1])));
    }

    /**
     * {@link #formatParams()} without and with an inflight region, and without and with a dirty log, for the
     * benchmarks of the device queue.
     */
    static Stream<Arguments> deviceParams() {
        return Stream.of(false, true).flatMap(i -> Stream.of(false, true).flatMap(l -> formatParams().map(
                a -> Arguments.of(a.get()[0], a.get()[1], a.get()[2], i, l))));
    }

    /** Fewest bytes one round allocated; stops at the first round that allocated none. */
    private static long leastAllocatedPerRound(Runnable invocation) {
        long least = Long.MAX_VALUE;
        for (int round = 0; round < MAX_ROUNDS && least > 0; round++) {
            long before = THREADS.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < INVOCATIONS_PER_ROUND; i++) {
                invocation.run();
            }
            least = Math.min(least, THREADS.getCurrentThreadAllocatedBytes() - before);
        }
        return least;
    }

    private static <S extends RingPathBenchmark.RingState> S configure(S s, Ordering ordering, int batch) {
        s.ordering = ordering;
        s.batch = batch;
        return s;
    }

    /**
     * With {@code inflight} the device queue recorded in its region: initialised it and (split) moved the region's
     * {@code used_idx} with the ring's used index; without, there is no region.
     */
    private static void assertRecorded(Ring ring, boolean inflight) {
        if (!inflight) {
            assertNull(ring.inflightRegion);
            return;
        }
        MemorySegment r = ring.inflightRegion;
        boolean packed = ring.areas.format() == RingFormat.PACKED;
        assertEquals(InflightLayout.VERSION, r.get(ValueLayout.JAVA_SHORT_UNALIGNED,
                packed ? InflightLayout.PACKED_VERSION : InflightLayout.SPLIT_VERSION));
        if (!packed) {
            assertEquals(ring.used.idxAcquire(), Short.toUnsignedInt(r.get(ValueLayout.JAVA_SHORT_UNALIGNED,
                    InflightLayout.SPLIT_USED_IDX)), "the region follows the published used index");
        }
    }

    /**
     * With {@code dirtyLog} the device queue marked its ring writes: the ring's page (the ring of 64 lies in the
     * segment's first page) and no other, the buffers being only read; without, there is no log.
     */
    private static void assertLogged(Ring ring, boolean dirtyLog) {
        if (!dirtyLog) {
            assertNull(ring.dirtyLog);
            return;
        }
        assertTrue(ring.dirtyLog.isDirty(0), "the ring's page");
        assertEquals(1, ring.dirtyLog.dirtyPages(), "the ring's page only");
    }

    @ParameterizedTest(name = "{0} {1} batch {2}")
    @MethodSource("formatParams")
    void addKickAllocatesNothing(RingFormat format, Ordering ordering, int batch) {
        RingPathBenchmark b = new RingPathBenchmark();
        RingPathBenchmark.AddKickState s = configure(new RingPathBenchmark.AddKickState(), ordering, batch);
        s.format = format;
        s.setup();
        try {
            assertEquals(0, leastAllocatedPerRound(() -> b.addKick(s, BH)));
        } finally {
            s.close();
        }
    }

    @ParameterizedTest(name = "{0} {1} batch {2} inflight {3} dirtyLog {4}")
    @MethodSource("deviceParams")
    void popPushAllocatesNothing(RingFormat format, Ordering ordering, int batch, boolean inflight, boolean dirtyLog) {
        RingPathBenchmark b = new RingPathBenchmark();
        RingPathBenchmark.PopPushState s = configure(new RingPathBenchmark.PopPushState(), ordering, batch);
        s.format = format;
        s.inflight = inflight;
        s.dirtyLog = dirtyLog;
        s.setup();
        try {
            assertEquals(0, leastAllocatedPerRound(() -> b.popPush(s, BH)));
            assertRecorded(s.ring, inflight);
            assertLogged(s.ring, dirtyLog);
        } finally {
            s.close();
        }
    }

    @ParameterizedTest(name = "{0} batch {1}")
    @MethodSource("params")
    void reapAllocatesNothing(Ordering ordering, int batch) {
        RingPathBenchmark b = new RingPathBenchmark();
        RingPathBenchmark.ReapState s = configure(new RingPathBenchmark.ReapState(), ordering, batch);
        s.setup();
        try {
            assertEquals(0, leastAllocatedPerRound(() -> b.reap(s, BH)));
        } finally {
            s.close();
        }
    }

    @ParameterizedTest(name = "{0} {1} batch {2} inflight {3} dirtyLog {4}")
    @MethodSource("deviceParams")
    void cycleAllocatesNothing(RingFormat format, Ordering ordering, int batch, boolean inflight, boolean dirtyLog) {
        RingPathBenchmark b = new RingPathBenchmark();
        RingPathBenchmark.CycleState s = configure(new RingPathBenchmark.CycleState(), ordering, batch);
        s.format = format;
        s.inflight = inflight;
        s.dirtyLog = dirtyLog;
        s.setup();
        try {
            assertEquals(0, leastAllocatedPerRound(() -> b.cycle(s, BH)));
            assertRecorded(s.ring, inflight);
            assertLogged(s.ring, dirtyLog);
        } finally {
            s.close();
        }
    }
}
