package io.virtio4j.core.stress;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.layout.RingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.ordering.Ordering;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.BitSet;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * A driver thread and a device thread over one ring with checked payloads, for the stress and
 * lost-notification tests. The driver fills every readable byte from a per-buffer seed; the device folds
 * all readable bytes into a checksum and fills every writable byte from it; the driver checks the used
 * length and every writable byte, and that each token comes back exactly once.
 *
 * <p>Waiting never hides a lost notification: a side that sleeps waits up to {@code stallNanos} and, if it
 * wakes by time-out while the other side had left it work, records a failure instead of carrying on.
 */
final class RingPair {
    static final int MAX_ELEM = 192;

    record Shape(RingFormat format, int queueSize, int batch, int maxReadable, int maxWritable, boolean indirect,
                 boolean eventIdx, Ordering ordering, AvailPublication publication, boolean cachedAvail,
                 boolean inOrder, NotificationMode driverMode, NotificationMode deviceMode, boolean delayed, long seed) {
    }

    private final Shape shape;
    private final long buffers;
    private final long stallNanos;
    private final DriverQueue driver;
    private final DeviceQueue device;
    private final ParkingNotifier kick = new ParkingNotifier();
    private final ParkingNotifier call = new ParkingNotifier();
    private final MemorySegment mem;
    private final long poolBase;
    private final int maxElements;
    private final boolean indirect;
    private volatile boolean stop;
    private volatile String failure;
    volatile long completed;

    RingPair(Shape shape, long buffers, long stallNanos, Arena arena) {
        this.shape = shape;
        this.buffers = buffers;
        this.stallNanos = stallNanos;
        int q = shape.queueSize();
        maxElements = Math.max(1, shape.maxReadable() + shape.maxWritable());
        indirect = shape.indirect() && maxElements >= 2;
        long indirectBytes = indirect ? DriverOptions.indirectTablesBytes(q, maxElements) : 0;
        long pool = (long) q * maxElements * MAX_ELEM;
        RingSegment ring = RingSegment.allocate(arena, shape.format(), q, 64, indirectBytes + pool);
        mem = ring.segment();
        long ringBytes = ring.dataOffset();
        poolBase = ringBytes + indirectBytes;
        RingAreas areas = ring.areas();
        DriverOptions d = DriverOptions.defaults().withOrdering(shape.ordering()).withEventIdx(shape.eventIdx())
                .withPublication(shape.publication()).withAdaptiveInterval(1, 16).withInOrder(shape.inOrder());
        if (indirect) {
            d = d.withIndirect(mem.asSlice(ringBytes, indirectBytes), ringBytes, maxElements, 2);
        }
        driver = DriverQueue.over(areas, d, kick);
        device = DeviceQueue.over(areas, ring.guestMemory(), new DeviceOptions(shape.ordering(),
                shape.eventIdx(), indirect, shape.cachedAvail(), shape.inOrder()), call);
    }

    /** Runs to completion; returns null on success or a description of what went wrong. */
    String run(long watchdogMillis) throws InterruptedException {
        Thread dev = new Thread(this::deviceMain, "stress-device");
        Thread drv = new Thread(this::driverMain, "stress-driver");
        dev.start();
        drv.start();
        drv.join(watchdogMillis);
        if (drv.isAlive()) {
            fail("watchdog: driver still running after " + watchdogMillis + " ms, completed " + completed + "/" + buffers);
        }
        stop = true;
        kick.signal();
        call.signal();
        drv.interrupt();
        drv.join(5000);
        dev.join(5000);
        if (dev.isAlive()) {
            dev.interrupt();
            fail("device thread did not stop");
        }
        return failure;
    }

    private void fail(String why) {
        if (failure == null) {
            failure = why + " [" + shape + "] driver{" + driver.counters() + "} device{" + device.counters() + "}";
        }
        stop = true;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
        return z ^ (z >>> 33);
    }

    private void driverMain() {
        try {
            SplittableRandom rnd = new SplittableRandom(shape.seed());
            int q = shape.queueSize();
            ScatterGather sg = new ScatterGather(maxElements);
            int[] freeSlots = new int[q];
            Integer[] tokens = new Integer[q];
            long[] expectedLen = new long[q];
            long[] checksum = new long[q];
            long[] bufferNo = new long[q];
            int[] shapes = new int[q]; // readable count << 8 | writable count
            int[][] lens = new int[q][maxElements];
            for (int i = 0; i < q; i++) {
                freeSlots[i] = i;
                tokens[i] = i;
            }
            int free = q;
            BitSet returned = new BitSet();
            long started = 0;
            long done = 0;
            if (shape.driverMode() == NotificationMode.POLL) {
                driver.disableCallbacks();
            }
            while (done < buffers && !stop) {
                int added = 0;
                int batch = 1 + rnd.nextInt(shape.batch());
                while (added < batch && started < buffers && free > 0) {
                    int r = shape.maxReadable() == 0 ? 0 : rnd.nextInt(shape.maxReadable() + 1);
                    int w = shape.maxWritable() == 0 ? 0 : rnd.nextInt(shape.maxWritable() + 1);
                    while (r + w > q) { // a chain must not be longer than the queue size
                        if (w > 0) {
                            w--;
                        } else {
                            r--;
                        }
                    }
                    if (r + w == 0) {
                        if (shape.maxReadable() > 0) {
                            r = 1;
                        } else {
                            w = 1;
                        }
                    }
                    int needed = indirect && r + w >= 2 ? 1 : r + w;
                    if (driver.freeDescriptors() < needed) {
                        break;
                    }
                    int slot = freeSlots[--free];
                    long seed = mix(shape.seed() ^ started);
                    long sum = 0;
                    long wlen = 0;
                    sg.clear();
                    for (int e = 0; e < r + w; e++) {
                        int len = 1 + rnd.nextInt(MAX_ELEM);
                        long addr = poolBase + ((long) slot * maxElements + e) * MAX_ELEM;
                        lens[slot][e] = len;
                        if (e < r) {
                            for (int b = 0; b < len; b++) {
                                byte v = (byte) mix(seed + e * 1000L + b);
                                mem.set(ValueLayout.JAVA_BYTE, addr + b, v);
                                sum = sum * 31 + v;
                            }
                            sg.readable(addr, len);
                        } else {
                            mem.asSlice(addr, len).fill((byte) 0xEE);
                            sg.writable(addr, len);
                            wlen += len;
                        }
                    }
                    shapes[slot] = r << 8 | w;
                    checksum[slot] = sum;
                    expectedLen[slot] = wlen;
                    bufferNo[slot] = started;
                    driver.add(sg, tokens[slot]);
                    started++;
                    added++;
                }
                if (added > 0) {
                    driver.kick();
                }
                int reaped = 0;
                Object t;
                while ((t = driver.pollUsed()) != null) {
                    int slot = (Integer) t;
                    if (returned.get((int) bufferNo[slot])) {
                        fail("buffer " + bufferNo[slot] + " returned twice");
                        return;
                    }
                    returned.set((int) bufferNo[slot]);
                    if (driver.lastUsedLength() != expectedLen[slot]) {
                        fail("buffer " + bufferNo[slot] + " used length " + driver.lastUsedLength() + " != " + expectedLen[slot]);
                        return;
                    }
                    int r = shapes[slot] >> 8;
                    int w = shapes[slot] & 0xFF;
                    long pos = 0;
                    for (int e = r; e < r + w; e++) {
                        long addr = poolBase + ((long) slot * maxElements + e) * MAX_ELEM;
                        for (int b = 0; b < lens[slot][e]; b++, pos++) {
                            byte expect = (byte) mix(checksum[slot] + pos);
                            if (mem.get(ValueLayout.JAVA_BYTE, addr + b) != expect) {
                                fail("buffer " + bufferNo[slot] + " writable byte " + pos + " corrupted");
                                return;
                            }
                        }
                    }
                    freeSlots[free++] = slot;
                    reaped++;
                }
                done += reaped;
                completed = done;
                if (added > 0 || reaped > 0 || shape.driverMode() == NotificationMode.POLL) {
                    if (added == 0 && reaped == 0) {
                        Thread.onSpinWait();
                    }
                    continue;
                }
                if (shape.driverMode() == NotificationMode.HYBRID && rnd.nextInt(4) != 0) {
                    Thread.onSpinWait();
                    continue;
                }
                boolean sleep = !(shape.delayed() ? driver.enableCallbacksDelayedOrFindPending() : driver.enableCallbacksOrFindPending());
                if (sleep && !call.await(stallNanos) && !stop) {
                    // Timed out. Legitimate only if the device has nothing for us, or a notification for what it
                    // just returned is on its way; used buffers and no notification coming means one was lost.
                    if (driver.hasUsed() && !call.await(stallNanos / 4)) {
                        fail("lost used-buffer notification: used buffers pending after " + stallNanos / 1_000_000 + " ms asleep");
                        return;
                    }
                }
                driver.disableCallbacks();
            }
            if (done == buffers && returned.cardinality() != buffers) {
                fail("only " + returned.cardinality() + " distinct buffers returned of " + buffers);
            }
        } catch (Throwable e) {
            fail("driver threw " + e);
        } finally {
            stop = true;
            kick.signal();
        }
    }

    private void deviceMain() {
        try {
            SplittableRandom rnd = new SplittableRandom(~shape.seed());
            int pending = 0;
            int flushEvery = 1 + rnd.nextInt(shape.batch());
            device.disableKicks();
            while (true) {
                DescriptorChain c = device.pop();
                if (c != null) {
                    long sum = 0;
                    for (int e = 0; e < c.readableCount(); e++) {
                        MemorySegment seg = c.region(e);
                        long off = c.offset(e);
                        for (long b = 0; b < c.length(e); b++) {
                            sum = sum * 31 + seg.get(ValueLayout.JAVA_BYTE, off + b);
                        }
                    }
                    long pos = 0;
                    for (int e = c.readableCount(); e < c.count(); e++) {
                        MemorySegment seg = c.region(e);
                        long off = c.offset(e);
                        for (long b = 0; b < c.length(e); b++, pos++) {
                            seg.set(ValueLayout.JAVA_BYTE, off + b, (byte) mix(sum + pos));
                        }
                    }
                    device.pushUsed(c.head(), c.writableBytes());
                    if (++pending >= flushEvery) {
                        device.flushUsed();
                        pending = 0;
                    }
                    continue;
                }
                if (pending > 0) {
                    device.flushUsed();
                    pending = 0;
                }
                if (stop) {
                    return;
                }
                if (shape.deviceMode() == NotificationMode.POLL
                        || shape.deviceMode() == NotificationMode.HYBRID && rnd.nextInt(4) != 0) {
                    Thread.onSpinWait();
                    continue;
                }
                if (!device.enableKicksOrFindPending()) {
                    if (!kick.await(stallNanos) && !stop && device.enableKicksOrFindPending() && !kick.await(stallNanos / 4)) {
                        fail("lost kick: buffers available after " + TimeUnit.NANOSECONDS.toMillis(stallNanos) + " ms asleep");
                        return;
                    }
                }
                device.disableKicks();
            }
        } catch (Throwable e) {
            fail("device threw " + e);
            call.signal();
        }
    }
}
