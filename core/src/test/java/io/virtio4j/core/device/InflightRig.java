package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport;
import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A driver, a device queue with an inflight region, and a back-end that can die at any point: {@link #crash()}
 * abandons the device queue as kill -9 would and starts a new one over the same ring memory and region, restarted
 * as QEMU restarts it after a disconnect (split: available position = the ring's used.idx; packed: the used
 * position and wrap counter the driver last saw published). Every buffer carries random readable bytes; the device
 * writes a transform of them into the writable part; the driver checks, by checksum, that each buffer comes back
 * exactly once with the right bytes and length.
 *
 * <p>Script operations: {@code pop}, {@code unpop} (the buffer popped last), {@code push:k} (the k-th oldest
 * buffer popped and not pushed), {@code publish}, {@code add:n} (the driver adds and kicks n buffers).
 */
final class InflightRig implements AutoCloseable {
    final RingFormat format;
    final Pair pair;
    final MemorySegment region;
    /** The region with {@link #CANARY_BYTES} of canaries either side: nothing may write them. */
    private final MemorySegment outer;
    static final long CANARY_BYTES = 256;
    static final byte CANARY = (byte) 0xA5;
    final DeviceOptions options;
    DeviceQueue device;
    private final SplittableRandom random;
    private final int[] layout;
    private final ScatterGather sg = new ScatterGather(64);
    private int nextSlot;
    private int nextToken;

    /** Per token: the readable bytes' transform the device must write back, and where the writable part is. */
    private record Expected(long crc, int length, long[] writableAddrs, int[] writableLens) {
    }

    private final Map<Integer, Expected> expected = new HashMap<>();
    private final Map<Integer, Integer> reaped = new HashMap<>();
    /** Ids popped by the current device and not yet pushed, oldest first; with the bytes each will report. */
    private final List<int[]> popped = new ArrayList<>();
    /** The state the driver saw last: where the device stood at its last publication. */
    private QueueState published;

    /**
     * @param elements per buffer, readable and writable element counts alternating: {1, 1} is one readable and
     *                 one writable element; buffers cycle through the pairs
     * @param indirect whether the driver uses indirect tables (from 3 elements on)
     */
    InflightRig(RingFormat format, int queueSize, boolean inOrder, boolean indirect, long seed, int... elements) {
        this.format = format;
        DriverOptions driverOptions = DriverOptions.defaults().withInOrder(inOrder);
        this.options = DeviceOptions.defaults().withInOrder(inOrder);
        if (indirect) {
            pair = Pair.open(format, queueSize, 8, 3, driverOptions, options);
        } else {
            pair = Pair.open(format, queueSize, driverOptions, options);
        }
        this.random = new SplittableRandom(seed);
        this.layout = elements.length == 0 ? new int[] {1, 1} : elements;
        long bytes = InflightLayout.queueRegionBytes(format, queueSize);
        outer = RingTestSupport.allocate(pair.arena, bytes + 2 * CANARY_BYTES).fill(CANARY);
        region = outer.asSlice(CANARY_BYTES, bytes);
        // Garbage, not zeros, outside the version: a fresh region must not be trusted for anything but its version.
        for (long i = 0; i < region.byteSize(); i++) {
            region.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt(256));
        }
        region.set(ValueLayout.JAVA_SHORT_UNALIGNED, format == RingFormat.SPLIT ? InflightLayout.SPLIT_VERSION
                : InflightLayout.PACKED_VERSION, (short) 0);
        device = pair.device;
        published = device.state();
        assertEquals(0, device.restart(published, region), "a fresh region resubmits nothing");
    }

    /** Adds and kicks {@code n} buffers. */
    void add(int n) {
        for (int b = 0; b < n; b++) {
            int token = nextToken++;
            int shape = (token % (layout.length / 2)) * 2;
            sg.clear();
            byte[] data = new byte[0];
            for (int e = 0; e < layout[shape]; e++) {
                int len = 8 + random.nextInt(60);
                long addr = pair.slot(nextSlot++);
                byte[] bytes = new byte[len];
                random.nextBytes(bytes);
                MemorySegment.copy(bytes, 0, pair.memory, ValueLayout.JAVA_BYTE, addr, len);
                byte[] joined = new byte[data.length + len];
                System.arraycopy(data, 0, joined, 0, data.length);
                System.arraycopy(bytes, 0, joined, data.length, len);
                data = joined;
                sg.readable(addr, len);
            }
            int writable = layout[shape + 1];
            long[] addrs = new long[writable];
            int[] lens = new int[writable];
            int total = 0;
            for (int e = 0; e < writable; e++) {
                // All but the last element split the readable length; the last may be longer (a partial write).
                lens[e] = e < writable - 1 ? Math.max(1, data.length / writable) : Math.max(1, data.length - total)
                        + (token % 3 == 2 ? 5 : 0);
                total += lens[e];
                addrs[e] = pair.slot(nextSlot++);
                pair.memory.asSlice(addrs[e], lens[e]).fill((byte) 0);
                sg.writable(addrs[e], lens[e]);
            }
            int written = Math.min(data.length, total);
            expected.put(token, new Expected(crc(transform(data, written)), written, addrs, lens));
            pair.driver.add(sg, token);
        }
        pair.driver.kick();
    }

    private static byte[] transform(byte[] data, int n) {
        byte[] out = new byte[n];
        for (int i = 0; i < n; i++) {
            out[i] = (byte) (data[i] ^ 0x5A);
        }
        return out;
    }

    private static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }

    /** Pops one buffer, writes the transform of its readable bytes into its writable part; null when none. */
    int[] pop() {
        DescriptorChain chain = device.pop();
        if (chain == null) {
            return null;
        }
        byte[] data = new byte[(int) chain.readableBytes()];
        chain.gather(0, MemorySegment.ofArray(data), 0, data.length);
        int written = (int) Math.min(data.length, chain.writableBytes());
        byte[] out = transform(data, written);
        assertEquals(written, chain.scatter(0, MemorySegment.ofArray(out), 0, written));
        int[] entry = {chain.head(), written};
        popped.add(entry);
        return entry;
    }

    void run(String... script) {
        for (String op : script) {
            step(op);
        }
    }

    void step(String op) {
        if (op.equals("pop")) {
            assertNotNull(pop(), "a buffer to pop");
        } else if (op.equals("unpop")) {
            int[] last = popped.remove(popped.size() - 1);
            device.unpop(last[0]);
        } else if (op.startsWith("push:")) {
            int[] e = popped.remove(Integer.parseInt(op.substring(5)));
            device.pushUsed(e[0], e[1]);
        } else if (op.equals("publish")) {
            device.publishUsed();
            published = device.state();
            reapAll();
        } else if (op.startsWith("add:")) {
            add(Integer.parseInt(op.substring(4)));
        } else {
            throw new IllegalArgumentException(op);
        }
    }

    /** The state QEMU restarts a queue at after losing its back-end. */
    QueueState stateAfterDisconnect() {
        if (format == RingFormat.SPLIT) {
            int usedIdx = pair.used.idxAcquire();
            return QueueState.split(usedIdx, usedIdx);
        }
        return new QueueState(published.nextUsed(), published.usedWrap(), published.nextUsed(), published.usedWrap());
    }

    /** The back-end dies where it stands; a new one takes over the ring and the region. Returns the resubmitted. */
    int crash() {
        popped.clear();
        device = DeviceQueue.over(pair.areas, pair.guest, options, new RingTestSupport.CountingNotifier());
        int n = device.restart(stateAfterDisconnect(), region);
        assertFalse(device.isBroken());
        if (n > 0) {
            assertTrue(device.enableKicksOrFindPending(), "resubmitted buffers are pending without a kick");
        }
        QueueState seen = stateAfterDisconnect();
        assertEquals(seen.nextUsed(), device.state().nextUsed(), "resumes at the used position the driver saw");
        assertEquals(seen.usedWrap(), device.state().usedWrap(), "with its wrap counter");
        published = device.state();
        return n;
    }

    /** Serves everything available, pushing in pop order and publishing once per pass; reaps as it goes. */
    void drain() {
        for (int pass = 0; pass < 1000; pass++) {
            while (pop() != null) {
                // keep popping
            }
            if (popped.isEmpty()) {
                reapAll();
                return;
            }
            while (!popped.isEmpty()) {
                step("push:0");
            }
            step("publish");
        }
        throw new AssertionError("drain did not finish");
    }

    /** The driver reaps what is published, checking each buffer's bytes and length. */
    void reapAll() {
        Object token;
        while ((token = pair.driver.pollUsed()) != null) {
            int t = (Integer) token;
            reaped.merge(t, 1, Integer::sum);
            Expected e = expected.get(t);
            assertEquals(e.length, pair.driver.lastUsedLength(), "used length of buffer " + t);
            byte[] got = new byte[e.length];
            int at = 0;
            for (int i = 0; i < e.writableAddrs.length && at < e.length; i++) {
                int n = Math.min(e.writableLens[i], e.length - at);
                MemorySegment.copy(pair.memory, ValueLayout.JAVA_BYTE, e.writableAddrs[i], got, at, n);
                at += n;
            }
            assertEquals(e.crc, crc(got), "bytes of buffer " + t);
        }
    }

    /** Every buffer added came back exactly once, and the driver has none outstanding. */
    void assertAllBackOnce() {
        assertTrue(canariesIntact(), "nothing around the inflight region was written");
        assertEquals(0, pair.driver.inFlight(), "buffers the driver still waits for");
        for (int t = 0; t < nextToken; t++) {
            assertEquals(1, reaped.getOrDefault(t, 0), "times buffer " + t + " came back");
        }
        assertNull(pair.driver.pollUsed());
    }

    /** Whether the bytes either side of the region still hold the canary pattern. */
    boolean canariesIntact() {
        for (long i = 0; i < outer.byteSize(); i++) {
            if ((i < CANARY_BYTES || i >= CANARY_BYTES + region.byteSize())
                    && outer.get(ValueLayout.JAVA_BYTE, i) != CANARY) {
                return false;
            }
        }
        return true;
    }

    int added() {
        return nextToken;
    }

    /** Ids popped by the current device and not yet pushed, oldest first. */
    List<int[]> popped() {
        return popped;
    }

    /**
     * A valid random script of {@code length} operations for a queue of {@code size}: buffers added while the
     * driver has room ({@code maxDescs} descriptors per buffer at most), pops of available ones, unpops right after
     * pops, pushes in any order (pop order under IN_ORDER), publications.
     */
    static String[] randomScript(long seed, int length, int size, int maxDescs, boolean inOrder) {
        SplittableRandom r = new SplittableRandom(seed);
        List<String> ops = new ArrayList<>();
        int capacity = size / maxDescs;
        int outstanding = 0; // added, not yet published
        int avail = 0;
        int inDevice = 0;
        int pushed = 0;
        int unpoppable = 0;
        while (ops.size() < length) {
            int choice = r.nextInt(10);
            if (choice == 0 && outstanding < capacity) {
                int n = 1 + r.nextInt(capacity - outstanding);
                ops.add("add:" + n);
                outstanding += n;
                avail += n;
            } else if (choice <= 3 && avail > 0) {
                ops.add("pop");
                avail--;
                inDevice++;
                unpoppable++;
            } else if (choice == 4 && unpoppable > 0) {
                ops.add("unpop");
                avail++;
                inDevice--;
                unpoppable--;
            } else if (choice <= 7 && inDevice > 0) {
                ops.add("push:" + (inOrder ? 0 : r.nextInt(inDevice)));
                inDevice--;
                pushed++;
                unpoppable = 0;
            } else if (choice >= 8 && pushed > 0) {
                ops.add("publish");
                outstanding -= pushed;
                pushed = 0;
                unpoppable = 0;
            }
        }
        return ops.toArray(String[]::new);
    }

    @Override
    public void close() {
        pair.close();
    }
}
