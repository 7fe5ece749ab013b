package io.virtio4j.bench;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benchmark moves every buffer and verifies the echoed payload, in process and across two processes. */
class BenchmarkRunsTest {

    private static BenchConfig small(String ring, String mode) {
        return BenchConfig.defaults().with("bufs", "200000").with("ring", ring).with("mode", mode)
                .with("verify", "true").with("chain", "3").with("ring-size", "64");
    }

    @ParameterizedTest(name = "{0} {1} ring {2} indirect={3} publish={4} barriers={5} in-order={6}")
    @CsvSource({
        "split, poll, 64, false, eager, weak, off",
        "split, notify, 64, true, lazy, strong, on",
        "split, hybrid, 64, false, adaptive, weak, off",
        "split, notify, 64, false, adaptive, strong, on",
        "packed, poll, 64, false, eager, weak, off",
        "packed, notify, 64, true, lazy, strong, on",
        "packed, hybrid, 48, false, adaptive, weak, on",
        "packed, notify, 100, false, adaptive, strong, off",
    })
    void inProcessRunsMoveEveryBuffer(String ring, String mode, int ringSize, boolean indirect, String publish,
                                      String barriers, String inOrder) throws Exception {
        BenchConfig cfg = small(ring, mode).with("ring-size", Integer.toString(ringSize))
                .with("indirect", Boolean.toString(indirect)).with("avail-publish", publish)
                .with("barriers", barriers).with("in-order", inOrder);
        RunResult r = RingBenchmark.run(cfg);
        assertEquals(cfg.bufs(), r.buffers());
        assertEquals(cfg.bufs(), r.driver().completions);
        assertEquals(cfg.bufs(), r.device().completions);
        assertTrue(r.elapsedNanos() > 0);
    }

    @Test
    void twoProcessRunsMoveEveryBufferAndReportTheDevicesCounters() throws Exception {
        try (TwoProcessBenchmark two = TwoProcessBenchmark.start()) {
            for (String ring : new String[] {"split", "packed"}) {
                for (String mode : new String[] {"notify", "poll"}) {
                    // packed: a size that is no power of two, which the device process must take as a whole
                    BenchConfig cfg = small(ring, mode).with("ring-size", ring.equals("packed") ? "48" : "64");
                    String what = ring + " " + mode;
                    RunResult r = two.run(cfg);
                    assertEquals(cfg.bufs(), r.buffers(), what);
                    assertEquals(cfg.bufs(), r.device().buffers, "device popped every buffer (" + what + ")");
                    assertEquals(cfg.bufs(), r.device().completions, what);
                    assertEquals(0, r.device().errors, what);
                }
            }
        }
    }
}
