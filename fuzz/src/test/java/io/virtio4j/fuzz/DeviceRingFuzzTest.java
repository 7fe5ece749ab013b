package io.virtio4j.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzz target {@code device-ring} (a): the device-side descriptor-chain walker of both ring formats, driven by an
 * action grammar in the manner of QEMU's virtqueue fuzzer. The input picks the ring's shape, then a program: the
 * honest driver adds buffers and publishes them, the device pops, pushes and publishes, the driver reaps
 * ({@link RingProgram}), and a hostile driver writes arbitrary values into what the driver owns (descriptors, the
 * available ring or driver event area, indirect tables). The invariants are {@link RingProgram}'s: an honest ring
 * returns every buffer exactly once, intact; a scribbled one is refused only with a named
 * {@link io.virtio4j.core.error.RingViolationException} that breaks the queue, never with anything else, and never
 * hands out a chain outside guest memory or a buffer twice.
 */
class DeviceRingFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void walk(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        try (RingHarness h = new RingHarness(in)) {
            RingProgram p = new RingProgram(h, in);
            while (p.more()) {
                int op = in.u8() % (RingProgram.COMMON_OPS + 1);
                if (op < RingProgram.COMMON_OPS) {
                    p.step(op);
                } else {
                    // the hostile driver writes 1 to 8 bytes into what the driver owns and the device reads
                    p.hostile();
                    h.scribble(in, h.driverAreas());
                }
            }
            p.drain();
            p.detachAll();
        }
    }
}
