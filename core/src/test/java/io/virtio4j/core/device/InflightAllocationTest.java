package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport;
import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * With an inflight region attached, the device's hot path (pop, unpop, push out of order, publish, flush) still
 * allocates nothing once compiled. Only the device's calls are measured (the driver runs on the same thread, outside
 * the measured spans); rounds repeat until one allocates nothing, so a slow JIT only makes the test longer.
 */
class InflightAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int MAX_ROUNDS = 5_000;
    private static final int PER_ROUND = 4;
    private static final Integer[] TOKENS = {0, 1, 2, 3};

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void theHotPathWithARegionAllocatesNothing(RingFormat format) {
        try (Pair p = Pair.open(format, 16, DriverOptions.defaults(), DeviceOptions.defaults())) {
            MemorySegment region = RingTestSupport.allocate(p.arena, InflightLayout.queueRegionBytes(format, 16));
            assertEquals(0, p.device.restart(p.device.state(), region));
            int[] ids = new int[PER_ROUND];
            long least = Long.MAX_VALUE;
            for (int round = 0; round < MAX_ROUNDS && least > 0; round++) {
                for (int i = 0; i < PER_ROUND; i++) {
                    p.add(TOKENS[i], 1, 1);
                }
                p.driver.kick();
                long before = THREADS.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < PER_ROUND; i++) {
                    DescriptorChain c = p.device.pop();
                    ids[i] = c == null ? -1 : c.head();
                }
                p.device.unpop(ids[PER_ROUND - 1]);
                ids[PER_ROUND - 1] = p.device.pop().head();
                for (int i = PER_ROUND - 1; i >= 0; i--) {
                    p.device.pushUsed(ids[i], 0);
                    if (i == 2) {
                        p.device.publishUsed();
                    }
                }
                p.device.flushUsed();
                least = Math.min(least, THREADS.getCurrentThreadAllocatedBytes() - before);
                for (int i = 0; i < PER_ROUND; i++) {
                    assertNotNull(p.driver.pollUsed());
                }
            }
            assertEquals(0, least, "bytes allocated by the least-allocating round of the device's hot path");
        }
    }
}
