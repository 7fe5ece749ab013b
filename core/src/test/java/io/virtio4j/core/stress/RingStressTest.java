package io.virtio4j.core.stress;

import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Randomised two-thread stress of the ring engine: random queue sizes, chain shapes, batch sizes, barrier
 * modes, publication policies and notification modes. Every token must come back exactly once with its
 * payload intact, and no side may sleep through a notification.
 */
class RingStressTest {
    private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(10);

    @Test
    void randomConfigurationsReturnEveryBufferOnceWithIntactPayload() throws InterruptedException {
        long master = Long.getLong("virtio4j.stress.seed", 0x5EEDL);
        int iterations = Integer.getInteger("virtio4j.stress.iterations", 40);
        SplittableRandom rnd = new SplittableRandom(master);
        NotificationMode[] modes = NotificationMode.values();
        for (int i = 0; i < iterations; i++) {
            RingFormat format = RingFormat.values()[rnd.nextInt(2)];
            // a packed ring's size need not be a power of two
            int q = format == RingFormat.SPLIT ? 1 << rnd.nextInt(11) : 1 + rnd.nextInt(1024);
            int readable = rnd.nextInt(4);
            int writable = rnd.nextInt(4);
            if (readable + writable == 0) {
                readable = writable = 1;
            }
            RingPair.Shape shape = new RingPair.Shape(format, q, 1 + rnd.nextInt(2 * q), readable, writable,
                    rnd.nextBoolean(), rnd.nextBoolean(),
                    Ordering.values()[rnd.nextInt(2)], AvailPublication.values()[rnd.nextInt(3)], rnd.nextBoolean(),
                    rnd.nextBoolean(), modes[rnd.nextInt(3)], modes[rnd.nextInt(3)], rnd.nextBoolean(), rnd.nextLong());
            try (Arena arena = Arena.ofShared()) {
                RingPair pair = new RingPair(shape, 20_000, STALL_NANOS, arena);
                String failure = pair.run(TimeUnit.SECONDS.toMillis(120));
                assertNull(failure, "iteration " + i + " of master seed " + master + ": " + shape);
                assertEquals(20_000, pair.completed, "iteration " + i);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void interruptDrivenModeLosesNoNotificationOverMillionsOfBuffers(RingFormat format) throws InterruptedException {
        for (boolean eventIdx : new boolean[] {true, false}) {
            RingPair.Shape shape = new RingPair.Shape(format, 256, 4, 1, 0, false, eventIdx, Ordering.WEAK,
                    AvailPublication.EAGER, true, false, NotificationMode.NOTIFY, NotificationMode.NOTIFY, false, 42);
            try (Arena arena = Arena.ofShared()) {
                RingPair pair = new RingPair(shape, 1_000_000, STALL_NANOS, arena);
                String failure = pair.run(TimeUnit.MINUTES.toMillis(5));
                assertNull(failure, format + " event-idx " + eventIdx);
                assertEquals(1_000_000, pair.completed);
            }
        }
    }
}
