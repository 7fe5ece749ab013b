package io.virtio4j.bench.jmh;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.util.concurrent.TimeUnit;

/**
 * Throughput of one ring (split or packed) with the driver and the device in two threads that busy-poll (never
 * sleep), as {@code virtio4j bench --mode poll} does: cache-line transfers between the CPUs included, so the figure moves
 * 3-5x with the VM's near/far CPU placement (see docs/measuring.md). Needs two free CPUs.
 *
 * <p>Read the secondary result {@code reaped} (buffers returned to the driver per microsecond), not the primary
 * score: a call that finds nothing to do still counts as an invocation.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 2, jvmArgsAppend = {Ring.NATIVE_ACCESS, Ring.JMH_UNSAFE})
@State(Scope.Group)
public class DuplexRingBenchmark {
    static final int QUEUE_SIZE = 256;

    @Param({"SPLIT", "PACKED"})
    public RingFormat format;

    @Param({"WEAK", "STRONG"})
    public Ordering ordering;

    /** Most buffers the driver adds per kick, and the device pushes per used publication. */
    @Param({"1", "64"})
    public int batch;

    /** The device records every buffer it holds in an inflight region (vhost-user INFLIGHT_SHMFD). */
    @Param({"false", "true"})
    public boolean inflight;

    /** The device marks its used-ring writes in a dirty-page log (vhost-user VHOST_F_LOG_ALL, migration). */
    @Param({"false", "true"})
    public boolean dirtyLog;

    Ring ring;
    DriverQueue driver;
    DeviceQueue device;

    @Setup
    public void setup() {
        ring = new Ring(format, QUEUE_SIZE);
        driver = ring.driver(ordering, AvailPublication.EAGER);
        device = ring.device(ordering, inflight, dirtyLog);
        driver.disableCallbacks(); // both sides poll: no notifications wanted
    }

    @TearDown
    public void close() {
        ring.close();
    }

    /** Driver thread's own state: its scatter-gather list, buffer sequence number and counter. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class DriverSide {
        /** Buffers reaped: the throughput figure. */
        public long reaped;
        final ScatterGather sg = new ScatterGather(1);
        int seq;

        @Setup(Level.Iteration)
        public void clear() {
            reaped = 0;
        }
    }

    /** Device thread's counter. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class DeviceSide {
        /** Chains popped. */
        public long popped;

        @Setup(Level.Iteration)
        public void clear() {
            popped = 0;
        }
    }

    /** Driver: add up to {@code batch} buffers while descriptors are free, kick once, reap all that came back. */
    @Benchmark
    @Group("duplex")
    @GroupThreads(1)
    public void driver(DriverSide d, Blackhole bh) {
        DriverQueue q = driver;
        Object[] tokens = ring.tokens;
        int added = 0;
        while (added < batch && q.freeDescriptors() > 0) {
            int i = d.seq++;
            q.add(d.sg.clear().readable(ring.bufAddr(i), Ring.BUF_SIZE), tokens[i & (QUEUE_SIZE - 1)]);
            added++;
        }
        if (added > 0) {
            bh.consume(q.kick());
        }
        Object token;
        while ((token = q.pollUsed()) != null) {
            bh.consume(token);
            d.reaped++;
        }
    }

    /** Device: pop and push up to {@code batch} chains, then publish them with one {@code flushUsed}. */
    @Benchmark
    @Group("duplex")
    @GroupThreads(1)
    public void device(DeviceSide d, Blackhole bh) {
        DeviceQueue q = device;
        int n = 0;
        DescriptorChain chain;
        while (n < batch && (chain = q.pop()) != null) {
            q.pushUsed(chain.head(), 0);
            n++;
        }
        if (n > 0) {
            bh.consume(q.flushUsed());
            d.popped += n;
        }
    }
}
