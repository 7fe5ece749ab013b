package io.virtio4j.devices.blk;

import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static io.virtio4j.testkit.Bytes.random;
import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The device's request path allocates nothing once compiled: reads, writes (with their write-through flushes) and
 * flushes, popped, checked, performed on a file, answered and published. Only the device's passes are measured
 * (the driver's side runs on the same thread, outside the measured spans); rounds repeat until one allocates
 * nothing, so a slow JIT only makes the test longer. Over every engine: an asynchronous one's completions are reaped
 * by the passes as they come.
 */
@ParameterizedClass
@EnumSource(BlockEngine.class)
class BlkAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int MAX_ROUNDS = 3_000;
    private static final int PER_ROUND = 8;

    @Parameter
    BlockEngine engine;
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void servingRequestsAllocatesNothing(RingFormat format) throws IOException {
        serve(format, false);
    }

    /** The same with the first write's data across a region boundary: the split path allocates nothing either. */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void servingRequestsSplitAtARegionBoundaryAllocatesNothing(RingFormat format) throws IOException {
        serve(format, true);
    }

    private void serve(RingFormat format, boolean acrossRegions) throws IOException {
        Path f = dir.resolve("disk.img");
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.setLength(1 << 20);
        }
        try (BlockStore store = BlockStore.open(f.toString(), false, 512);
             BlkRig rig = new BlkRig(format, store, engine.open(store, 16), 0 /* write-through */, acrossRegions)) {
            long[] out = new long[PER_ROUND];
            long[] in = new long[PER_ROUND];
            long[] inBuf = new long[PER_ROUND];
            long[] data = new long[PER_ROUND];
            long[] status = new long[PER_ROUND];
            for (int i = 0; i < PER_ROUND; i++) {
                out[i] = rig.header(BlkLayout.T_OUT, i * 8L);
                data[i] = acrossRegions && i == 0 ? rig.allocAcross(1000, 4096) : rig.alloc(4096);
                rig.put(data[i], random(4096, i));
                status[i] = rig.alloc(1);
                in[i] = rig.header(BlkLayout.T_IN, i * 8L);
                inBuf[i] = rig.alloc(4097);
            }
            long flush = rig.header(BlkLayout.T_FLUSH, 0);
            long flushStatus = rig.alloc(1);
            ScatterGather sg = new ScatterGather(4);
            long least = Long.MAX_VALUE;
            for (int round = 0; round < MAX_ROUNDS && least > 0; round++) {
                for (int i = 0; i < PER_ROUND; i++) {
                    rig.driver.add(sg.clear().readable(out[i], 16).readable(data[i], 4096).writable(status[i], 1), i);
                    rig.driver.add(sg.clear().readable(in[i], 16).writable(inBuf[i], 4097), i);
                }
                rig.driver.add(sg.clear().readable(flush, 16).writable(flushStatus, 1), flush);
                rig.driver.kick();
                long allocated = 0;
                int back = 0;
                while (back < 2 * PER_ROUND + 1) {
                    long before = THREADS.getCurrentThreadAllocatedBytes();
                    rig.requests.pass(64);
                    allocated += THREADS.getCurrentThreadAllocatedBytes() - before;
                    while (rig.driver.pollUsed() != null) {
                        back++;
                    }
                }
                least = Math.min(least, allocated);
            }
            assertEquals(0, least, "bytes allocated by the device in its least allocating round");
            assertEquals(0, rig.stats.invalid() + rig.stats.ioErrors() + rig.stats.malformed());
            byte[] file = Files.readAllBytes(f);
            for (int i = 0; i < PER_ROUND; i++) {
                assertEquals(crc(random(4096, i)), crc(Arrays.copyOfRange(file, i * 4096, (i + 1) * 4096)),
                        "the file holds write " + i);
            }
        }
    }
}
