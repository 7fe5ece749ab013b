package io.virtio4j.bench.jmh;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.Descriptors;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * Code cost of the ring hot paths: one thread plays driver and device on one ring, so no cache line moves
 * between CPUs and the figures are instructions and fences, not coherence traffic (for that see
 * {@link DuplexRingBenchmark}). {@code addKick}, {@code popPush} and {@code cycle} run on either format
 * ({@code format} = SPLIT or PACKED); {@code reap} stands in for the device by writing split used elements by
 * hand, so it is split only.
 *
 * <p>Every invocation moves {@value #BUFFERS} one-element buffers through the ring in rounds of {@code batch}
 * buffers (one kick, one used publication per round), and the score is per buffer
 * ({@code @OperationsPerInvocation}). The ring holds {@value #BUFFERS} descriptors, so each invocation ends
 * where it started: no per-invocation setup. The path under test is the real core code; the other side is
 * either the real code too ({@code cycle}) or a stand-in of a few plain stores into the shared ring memory,
 * described on each benchmark, so that its cost stays small next to the path measured.
 *
 * <p>Both sides run as the busy-polling pair does in steady state: EVENT_IDX negotiated, the driver's used
 * callbacks disabled, the device's kicks suppressed (split: its {@code avail_event} is left behind; packed: its
 * event suppression says DISABLE), so neither notifier is signalled except, split only, on the rare 16-bit index
 * wrap onto a stale event index.
 *
 * <p>{@code ordering} = STRONG adds a full fence at each publication and observation point on top of the
 * store-&gt;load fences both modes take.
 *
 * <p>{@code inflight} = true ({@code popPush} and {@code cycle}) restarts the device queue over an inflight region, so
 * each pop, push and publication also records in it, as a vhost-user back-end with INFLIGHT_SHMFD does: the cost of
 * that tracking, next to the same path without it.
 *
 * <p>{@code dirtyLog} = true ({@code popPush} and {@code cycle}) has the device queue mark every used-ring write in a
 * dirty-page log, as a vhost-user back-end does during a live migration: the cost of logging on, next to off (which
 * costs a null check).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 2, jvmArgsAppend = {Ring.NATIVE_ACCESS, Ring.JMH_UNSAFE})
public class RingPathBenchmark {
    /** Buffers per invocation, and the queue size. */
    static final int BUFFERS = 64;

    /** Parameters and ring shared by the states below; each state builds only the queues its benchmark uses. */
    @State(Scope.Thread)
    public abstract static class RingState {
        @Param({"WEAK", "STRONG"})
        public Ordering ordering;

        /** Buffers per kick (driver) and per used publication (device). */
        @Param({"1", "64"})
        public int batch;

        Ring ring;
        final ScatterGather sg = new ScatterGather(1);

        void open(RingFormat format) {
            if (BUFFERS % batch != 0) {
                throw new IllegalArgumentException("batch " + batch + " must divide " + BUFFERS);
            }
            ring = new Ring(format, BUFFERS);
        }

        /** The one-element, device-readable buffer number {@code i} (the scatter-gather list is reused). */
        final ScatterGather buffer(int i) {
            return sg.clear().readable(ring.bufAddr(i), Ring.BUF_SIZE);
        }

        @TearDown
        public void close() {
            ring.close();
        }
    }

    /** Driver alone; the stand-in device hands every buffer back with {@code detachUnused()} and {@code reset()}. */
    @State(Scope.Thread)
    public static class AddKickState extends RingState {
        @Param({"SPLIT", "PACKED"})
        public RingFormat format;

        DriverQueue driver;

        @Setup
        public void setup() {
            open(format);
            driver = ring.driver(ordering, AvailPublication.EAGER);
            recycle();
        }

        /**
         * Stand-in for a device that completed everything: {@code detachUnused()} takes every buffer back and
         * {@code reset()} starts the ring afresh (a few plain array accesses per descriptor plus a few stores into
         * the ring, about a nanosecond per buffer), then parks the device's event as a device polling with kicks
         * disabled leaves it ({@link Ring#parkDeviceEvent}).
         */
        final void recycle() {
            while (driver.detachUnused() != null) {
                // every buffer added this round is taken back
            }
            driver.reset();
            ring.parkDeviceEvent();
        }
    }

    /**
     * Driver {@code add} of a one-element buffer ({@code ScatterGather} refill, descriptor, avail entry, EAGER
     * publication of {@code avail.idx}, or of the descriptor's flags for packed) and one {@code kick} per batch
     * (store-&gt;load fence, load of {@code avail_event} or of the device event suppression, kick suppressed).
     * Includes the stand-in's {@code reset()} once per {@value #BUFFERS} buffers.
     */
    @Benchmark
    @OperationsPerInvocation(BUFFERS)
    public void addKick(AddKickState s, Blackhole bh) {
        DriverQueue driver = s.driver;
        Object[] tokens = s.ring.tokens;
        int batch = s.batch;
        for (int i = 0; i < BUFFERS; ) {
            for (int end = i + batch; i < end; i++) {
                driver.add(s.buffer(i), tokens[i]);
            }
            bh.consume(driver.kick());
        }
        s.recycle();
    }

    /**
     * Device alone; a stand-in driver makes buffers available by hand. Split: descriptors and avail entries are
     * the same every lap, so they are written once here and one store of {@code avail.idx} per batch publishes.
     * Packed: the device overwrites each descriptor as used, so the stand-in rewrites addr, len and id (= slot) and
     * stores its flags (release) with this lap's AVAIL/USED bits, one buffer at a time.
     */
    @State(Scope.Thread)
    public static class PopPushState extends RingState {
        @Param({"SPLIT", "PACKED"})
        public RingFormat format;

        /** The device records every buffer it holds in an inflight region (vhost-user INFLIGHT_SHMFD). */
        @Param({"false", "true"})
        public boolean inflight;

        /** The device marks its used-ring writes in a dirty-page log (vhost-user VHOST_F_LOG_ALL, migration). */
        @Param({"false", "true"})
        public boolean dirtyLog;

        DeviceQueue device;
        /** Split: the stand-in's avail.idx. */
        int availIdx;
        /** Packed: the descriptor ring, the stand-in's next slot and wrap counter (starts at 1). */
        MemorySegment descRing;
        int nextSlot;
        boolean wrap = true;

        @Setup
        public void setup() {
            open(format);
            device = ring.device(ordering, inflight, dirtyLog);
            switch (ring.areas) {
                case SplitRingAreas split -> {
                    for (int h = 0; h < BUFFERS; h++) {
                        Descriptors.write(split.descTable(), 0, h, ring.bufAddr(h), Ring.BUF_SIZE, 0, 0);
                        ring.avail.entry(h, h);
                    }
                    // a driver that polls with callbacks disabled: used_event stays behind
                    ring.avail.usedEventRelease(Ring.FAR_EVENT);
                }
                case PackedRingAreas packed -> {
                    descRing = packed.descRing();
                    // a driver that polls with callbacks disabled: its event suppression says DISABLE
                    new EventSuppression(packed.driverEvent()).release(0, PackedLayout.EVENT_F_DISABLE);
                }
            }
        }

        /** Stand-in driver: makes {@code n} more one-element buffers available. */
        final void makeAvailable(int n) {
            if (descRing == null) {
                availIdx = (availIdx + n) & 0xFFFF;
                ring.avail.idxRelease(availIdx);
                return;
            }
            for (int k = 0; k < n; k++) {
                int slot = nextSlot;
                PackedDescriptors.write(descRing, slot, ring.bufAddr(slot), Ring.BUF_SIZE, slot);
                // release: addr, len and id above are visible to a device that sees these flags
                PackedDescriptors.flagsRelease(descRing, slot, PackedLayout.availBits(wrap));
                if (++nextSlot == BUFFERS) {
                    nextSlot = 0;
                    wrap = !wrap;
                }
            }
        }
    }

    /**
     * Device {@code pop} (split: reads {@code avail.idx} once per batch plus once to find the ring empty; packed:
     * reads each slot's flags; walks and bounds-checks the chain), {@code pushUsed}, and one {@code flushUsed} per
     * batch (publication of {@code used.idx} or of the first used descriptor's flags, store-&gt;load fence, load of
     * {@code used_event} or of the driver event suppression, notification suppressed). Includes the stand-in's
     * stores: one {@code avail.idx} store per batch (split), four stores per buffer (packed).
     */
    @Benchmark
    @OperationsPerInvocation(BUFFERS)
    public void popPush(PopPushState s, Blackhole bh) {
        DeviceQueue device = s.device;
        int batch = s.batch;
        for (int i = 0; i < BUFFERS; i += batch) {
            s.makeAvailable(batch);
            int popped = 0;
            DescriptorChain chain;
            while ((chain = device.pop()) != null) {
                device.pushUsed(chain.head(), 0);
                popped++;
            }
            bh.consume(device.flushUsed());
            check(popped, batch);
        }
    }

    /**
     * Driver alone on a split ring, reaping what a stand-in device returned. Tokens are only in flight after a
     * real {@code add}, so the stand-in adds with EAGER publication and no kick (a device may only use published
     * buffers, and the driver checks that) and writes the used elements and {@code used.idx} directly.
     */
    @State(Scope.Thread)
    public static class ReapState extends RingState {
        DriverQueue driver;
        int usedIdx;

        @Setup
        public void setup() {
            open(RingFormat.SPLIT);
            // EAGER: the stand-in device may only use buffers the driver has published, and the driver checks that
            driver = ring.driver(ordering, AvailPublication.EAGER);
            driver.disableCallbacks(); // a polling driver: pollUsed then skips the used_event store and fence
        }

        /** Stand-in: {@code n} adds, then a device that uses them all (id = head from the avail ring, len 0). */
        final void fill(int first, int n) {
            Object[] tokens = ring.tokens;
            for (int i = first, end = first + n; i < end; i++) {
                driver.add(buffer(i), tokens[i]);
            }
            int mask = BUFFERS - 1;
            for (int k = 0; k < n; k++) {
                int slot = usedIdx & mask; // avail and used indices move in lockstep here
                ring.used.elem(slot, ring.avail.entry(slot), 0);
                usedIdx = (usedIdx + 1) & 0xFFFF;
            }
            ring.used.idxRelease(usedIdx);
        }
    }

    /**
     * Driver {@code pollUsed} until it returns null (one {@code used.idx} load per batch plus one to find it
     * empty; id, length and token checks; free-list return). Includes the stand-in's EAGER {@code add} and used
     * element stores, which cost about as much as the reaping itself: compare with {@code cycle}.
     */
    @Benchmark
    @OperationsPerInvocation(BUFFERS)
    public void reap(ReapState s, Blackhole bh) {
        DriverQueue driver = s.driver;
        int batch = s.batch;
        for (int i = 0; i < BUFFERS; i += batch) {
            s.fill(i, batch);
            int reaped = 0;
            Object token;
            while ((token = driver.pollUsed()) != null) {
                bh.consume(token);
                reaped++;
            }
            check(reaped, batch);
        }
    }

    /** Real driver and real device on one ring, both in this thread. */
    @State(Scope.Thread)
    public static class CycleState extends RingState {
        @Param({"SPLIT", "PACKED"})
        public RingFormat format;

        /** The device records every buffer it holds in an inflight region (vhost-user INFLIGHT_SHMFD). */
        @Param({"false", "true"})
        public boolean inflight;

        /** The device marks its used-ring writes in a dirty-page log (vhost-user VHOST_F_LOG_ALL, migration). */
        @Param({"false", "true"})
        public boolean dirtyLog;

        DriverQueue driver;
        DeviceQueue device;

        @Setup
        public void setup() {
            open(format);
            driver = ring.driver(ordering, AvailPublication.EAGER);
            device = ring.device(ordering, inflight, dirtyLog);
            driver.disableCallbacks();
        }
    }

    /**
     * The whole round trip through the real API, per buffer: driver add + kick, device pop + pushUsed + flushUsed,
     * driver pollUsed; the sum the three isolated paths approximate, without any stand-in.
     */
    @Benchmark
    @OperationsPerInvocation(BUFFERS)
    public void cycle(CycleState s, Blackhole bh) {
        DriverQueue driver = s.driver;
        DeviceQueue device = s.device;
        Object[] tokens = s.ring.tokens;
        int batch = s.batch;
        for (int i = 0; i < BUFFERS; ) {
            for (int end = i + batch; i < end; i++) {
                driver.add(s.buffer(i), tokens[i]);
            }
            bh.consume(driver.kick());
            DescriptorChain chain;
            while ((chain = device.pop()) != null) {
                device.pushUsed(chain.head(), 0);
            }
            bh.consume(device.flushUsed());
            int reaped = 0;
            Object token;
            while ((token = driver.pollUsed()) != null) {
                bh.consume(token);
                reaped++;
            }
            check(reaped, batch);
        }
    }

    /** Guards against measuring a ring that silently stopped moving buffers; builds its message only on failure. */
    static void check(int moved, int expected) {
        if (moved != expected) {
            throw new IllegalStateException("moved " + moved + " buffers, expected " + expected);
        }
    }
}
