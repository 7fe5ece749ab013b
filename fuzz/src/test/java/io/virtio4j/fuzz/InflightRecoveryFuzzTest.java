package io.virtio4j.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzz target {@code inflight} (e): inflight-region recovery ({@link io.virtio4j.core.device.DeviceQueue#restart(
 * io.virtio4j.core.device.QueueState, java.lang.foreign.MemorySegment)}) of both ring formats. The input picks the
 * ring's shape, turns tracking on over a fresh region full of garbage, then runs a program of honest steps
 * ({@link RingProgram}) mixed with back-end crashes (a new device queue restarted over the same ring and region, as
 * after kill -9 and a reconnect) and front-end writes of arbitrary bytes into the region.
 *
 * <p>Invariants: with an honest region, each crash resubmits exactly the buffers the dead back-end had fetched and
 * not published, each once, ahead of the ring, and in the end every buffer comes back to the driver exactly once
 * with the bytes and length the device wrote, however many crashes came between. With a scribbled region: either
 * {@link io.virtio4j.core.error.InvalidInflightRegionException} (or another named violation, at restart or at a
 * later pop) breaks the queue, or what is resubmitted lies in guest memory and names no buffer twice; the driver
 * still reaps only buffers it added, each once; nothing is written outside the region or guest memory.
 */
class InflightRecoveryFuzzTest {
    private static final int CRASH = RingProgram.COMMON_OPS;
    private static final int SCRIBBLE_REGION = RingProgram.COMMON_OPS + 1;

    @FuzzTest(maxDuration = "10s")
    void recover(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        try (RingHarness h = new RingHarness(in)) {
            RingProgram p = new RingProgram(h, in);
            p.trackInflight();
            while (p.more()) {
                int op = in.u8() % (RingProgram.COMMON_OPS + 2);
                switch (op) {
                    case CRASH -> p.crash();
                    case SCRIBBLE_REGION -> p.scribbleRegion();
                    default -> p.step(op);
                }
            }
            p.drain();
            p.detachAll();
        }
    }
}
