package io.virtio4j.bench;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benchmark moves every buffer and verifies the echoed payload, in process and across two processes. */
class BenchmarkRunsTest {

    private static BenchConfig small(String mode) {
        return BenchConfig.defaults().with("bufs", "200000").with("mode", mode).with("verify", "true")
                .with("chain", "3").with("ring-size", "64");
    }

    @ParameterizedTest(name = "{0} indirect={1} publish={2} barriers={3}")
    @CsvSource({
        "poll, false, eager, weak",
        "notify, true, lazy, strong",
        "hybrid, false, adaptive, weak",
        "notify, false, adaptive, strong",
    })
    void inProcessRunsMoveEveryBuffer(String mode, boolean indirect, String publish, String barriers) throws Exception {
        BenchConfig cfg = small(mode).with("indirect", Boolean.toString(indirect)).with("avail-publish", publish)
                .with("barriers", barriers);
        RunResult r = RingBenchmark.run(cfg);
        assertEquals(cfg.bufs(), r.buffers());
        assertEquals(cfg.bufs(), r.driver().completions);
        assertEquals(cfg.bufs(), r.device().completions);
        assertTrue(r.elapsedNanos() > 0);
    }

    @Test
    void twoProcessRunsMoveEveryBufferAndReportTheDevicesCounters() throws Exception {
        try (TwoProcessBenchmark two = TwoProcessBenchmark.start()) {
            for (String mode : new String[] {"notify", "poll"}) {
                BenchConfig cfg = small(mode);
                RunResult r = two.run(cfg);
                assertEquals(cfg.bufs(), r.buffers(), mode);
                assertEquals(cfg.bufs(), r.device().buffers, "device popped every buffer (" + mode + ")");
                assertEquals(cfg.bufs(), r.device().completions, mode);
                assertEquals(0, r.device().errors, mode);
            }
        }
    }
}
