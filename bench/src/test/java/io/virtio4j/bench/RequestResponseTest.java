package io.virtio4j.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code bench --pattern rr}: one buffer in flight, every transaction's answer checked against the request's
 * checksum, every round trip in the histogram; in one process and across two; nothing allocated once compiled.
 */
class RequestResponseTest {

    private static BenchConfig rr(long transactions, String mode) {
        return BenchConfig.defaults().with(Map.of("bufs", Long.toString(transactions), "notify", mode,
                "queue-size", "64")).requestResponse();
    }

    /** Exactly N transactions, each popped, answered and reaped once, each round trip recorded. */
    private static void assertEveryTransaction(BenchConfig cfg, RunResult r, String what) {
        long n = cfg.bufs();
        assertEquals(n, r.buffers(), what);
        assertEquals(n, r.driver().completions, "driver reaped every answer (" + what + ")");
        assertEquals(n, r.device().buffers, "device popped every request (" + what + ")");
        assertEquals(n, r.device().completions, what);
        assertEquals(0, r.device().errors, what);
        assertEquals(n, r.roundTrips().count(), "one round trip per transaction (" + what + ")");
        assertTrue(r.roundTrips().min() > 0, what);
        double p50 = Metric.ROUND_TRIP_P50_NS.of(r);
        double p99 = Metric.ROUND_TRIP_P99_NS.of(r);
        assertTrue(p50 > 0 && p50 <= p99 && p99 <= r.roundTrips().max(), what + ": p50 " + p50 + ", p99 " + p99);
    }

    @ParameterizedTest(name = "{0} {1} {2} in-order {3} publish {4} indirect {5}")
    @CsvSource({
        "split, poll, weak, off, eager, false",
        "split, notify, strong, on, lazy, false",
        "split, hybrid, weak, off, adaptive, true",
        "packed, poll, strong, off, lazy, true",
        "packed, notify, weak, on, eager, false",
    })
    void inProcessEveryTransactionIsAnsweredAndTimed(String ring, String mode, String barriers, String inOrder,
                                                     String publish, boolean indirect) throws Exception {
        BenchConfig cfg = rr(mode.equals("poll") ? 20_000 : 2_000, mode).with(Map.of("ring", ring, "barriers", barriers,
                "in-order", inOrder, "avail-publish", publish, "indirect", Boolean.toString(indirect)));
        RunResult r = RingBenchmark.run(cfg);
        assertEveryTransaction(cfg, r, cfg.describe());
        if (mode.equals("notify")) {
            // the device sleeps between requests, so the driver kicks for (nearly) every one
            assertTrue(r.driver().kicksSent > 0, "kicks " + r.driver().kicksSent);
        }
    }

    /** Requests of 3 elements (2 readable) and a 1-page payload, a dirty log: the echo is checked whole and logged. */
    @Test
    void aLargerRequestIsEchoedWholeAndItsAnswerPageLogged() throws Exception {
        BenchConfig cfg = rr(500, "poll").with(Map.of("chain", "3", "buf-size", "4096", "dirty-log", "on"));
        RunResult r = RingBenchmark.run(cfg);
        assertEveryTransaction(cfg, r, "chain 3 x 4096");
        // the ring's page and the one answer page (slot 0, element 2): the only places the device writes
        assertEquals(2, r.dirtyPages());
    }

    @Test
    void twoProcessEveryTransactionIsAnsweredAndTimed() throws Exception {
        try (TwoProcessBenchmark two = TwoProcessBenchmark.start()) {
            for (String mode : List.of("poll", "notify")) {
                BenchConfig cfg = rr(mode.equals("poll") ? 10_000 : 1_000, mode).with("barriers", "strong");
                assertEveryTransaction(cfg, two.run(cfg), "two processes, " + mode);
            }
        }
    }

    /** The check the driver makes of every answer passes on the echo only, and fails on anything else. */
    @Test
    void anAnswerIsCheckedAgainstItsRequest() {
        int size = 61; // words and a tail of bytes
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(256);
            long expected = DriverLoop.writeRequest(mem, 0, size, 7);
            assertEquals(7, mem.get(ValueLayout.JAVA_LONG_UNALIGNED, 0), "the sequence number first");
            MemorySegment.copy(mem, 0, mem, 128, size);
            assertDoesNotThrow(() -> DriverLoop.checkAnswer(mem, 128, size, size, 7, expected));

            assertThrows(BenchmarkFailedException.class, () -> DriverLoop.checkAnswer(mem, 128, size, size - 1, 7,
                    expected), "a short used length");
            mem.set(ValueLayout.JAVA_BYTE, 128 + size - 1, (byte) (mem.get(ValueLayout.JAVA_BYTE, 128 + size - 1) ^ 1));
            BenchmarkFailedException e = assertThrows(BenchmarkFailedException.class,
                    () -> DriverLoop.checkAnswer(mem, 128, size, size, 7, expected), "one bit of the tail");
            assertTrue(e.getMessage().startsWith("transaction 7 was answered with 61 bytes"), e.getMessage());

            long previous = DriverLoop.writeRequest(mem, 0, size, 6);
            MemorySegment.copy(mem, 0, mem, 128, size);
            long next = DriverLoop.writeRequest(mem, 0, size, 7);
            assertTrue(previous != next);
            assertThrows(BenchmarkFailedException.class, () -> DriverLoop.checkAnswer(mem, 128, size, size, 7, next),
                    "the answer to the previous request");
        }
    }

    /**
     * Both threads' allocation over a measured run, as the bench reports it: once the loops are compiled a run
     * allocates nothing. Runs repeat until one allocated nothing, so a slow JIT only makes the test longer.
     */
    @ParameterizedTest
    @CsvSource({"poll, 20000", "notify, 2000"})
    void aRunAllocatesNothingOnceCompiled(String mode, long transactions) throws Exception {
        BenchConfig cfg = rr(transactions, mode);
        long least = Long.MAX_VALUE;
        for (int round = 0; round < 40 && least > 0; round++) {
            least = Math.min(least, RingBenchmark.run(cfg).allocatedBytes());
        }
        assertEquals(0, least, "bytes a " + mode + " request-response run allocated in its best round");
    }

    @Test
    void aStreamRunHasNoRoundTrips() throws Exception {
        BenchConfig cfg = BenchConfig.defaults().with(Map.of("bufs", "1000", "queue-size", "64"));
        RunResult r = RingBenchmark.run(cfg);
        assertNull(r.roundTrips());
        assertTrue(Double.isNaN(Metric.ROUND_TRIP_P50_NS.of(r)));
        assertTrue(!Metric.ROUND_TRIP_P50_NS.shownFor(cfg) && Metric.ROUND_TRIP_P50_NS.shownFor(rr(1, "poll")));
    }

    @Test
    void theShapeOfRequestResponseIsCheckedNamingEachOption() {
        BenchConfig rr = rr(1, "poll");
        assertEquals(TrafficPattern.RR, rr.pattern());
        assertEquals(1, rr.batch());
        assertEquals(2, rr.chain());
        InvalidBenchOptionException batch = assertThrows(InvalidBenchOptionException.class, () -> rr.with("batch", "4"));
        assertEquals(List.of("batch", "pattern"), batch.options());
        assertEquals("batch must be 1 with pattern rr (one buffer in flight), got 4", batch.getMessage());
        InvalidBenchOptionException chain = assertThrows(InvalidBenchOptionException.class, () -> rr.with("chain", "1"));
        assertEquals(List.of("chain", "pattern"), chain.options());
        InvalidBenchOptionException size = assertThrows(InvalidBenchOptionException.class,
                () -> rr.with("buf-size", "4"));
        assertEquals(List.of("bufSize", "pattern"), size.options());
        assertEquals("rr", rr.toMap().get("pattern"));
        assertTrue(rr.describe().startsWith("request-response, "), rr.describe());
    }
}
