package io.virtio4j.bench;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Bad options are named by the configuration's fields, never by a command-line flag; a front-end maps them. */
class BenchOptionErrorsTest {

    @Test
    void anOptionOutOfRangeIsNamedByItsField() {
        InvalidBenchOptionException e = assertThrows(InvalidBenchOptionException.class,
                () -> BenchConfig.defaults().with("buf-size", "0"));
        assertEquals(List.of("bufSize"), e.options());
        assertEquals("bufSize must be >= 1, got 0", e.getMessage());
        assertFalse(e.getMessage().contains("--"), e.getMessage());
    }

    @Test
    void anUnknownOptionIsRefusedNamingIt() {
        InvalidBenchOptionException e = assertThrows(InvalidBenchOptionException.class,
                () -> BenchConfig.defaults().with("ring-sise", "64"));
        assertEquals(List.of("ring-sise"), e.options());
        assertEquals(true, e.getMessage().startsWith("ring-sise is not a benchmark option; known: bufs, queue-size"),
                e.getMessage());
    }

    @Test
    void aRuleOverSeveralOptionsNamesEachAndTheFrontEndRenamesThem() {
        InvalidBenchOptionException e = assertThrows(InvalidBenchOptionException.class,
                () -> BenchConfig.defaults().with("chain", "1").with("indirect", "true"));
        assertEquals(List.of("indirect", "chain", "ringSize"), e.options());
        assertEquals("indirect needs chain in [2, ringSize], got 1 with a ring of 256", e.getMessage());
        assertEquals("<indirect> needs <chain> in [2, <ringSize>], got 1 with a ring of 256",
                e.describe(name -> "<" + name + ">"));
    }

    @Test
    void theRingSizeRuleFollowsTheRingFormat() {
        assertEquals(48, BenchConfig.defaults().with("ring", "packed").with("queue-size", "48").ringSize());
        InvalidBenchOptionException split = assertThrows(InvalidBenchOptionException.class,
                () -> BenchConfig.defaults().with("queue-size", "48"));
        assertEquals(List.of("ringSize"), split.options());
        InvalidBenchOptionException packed = assertThrows(InvalidBenchOptionException.class,
                () -> BenchConfig.defaults().with("ring", "packed").with("queue-size", "40000"));
        assertEquals(List.of("ringSize", "ring"), packed.options());
        assertEquals("ringSize must be in [1, 32768] with ring packed, got 40000", packed.getMessage());
        assertThrows(InvalidBenchOptionException.class,
                () -> BenchConfig.defaults().with("ring", "packed").with("queue-size", "48").with("ring", "split"),
                "switching back to split re-checks the size");
    }

    @Test
    void aVhostUserRunRefusesAnOptionItsBackEndWouldNotFollow() throws InterruptedException {
        try (VhostUserTxBench bench = new VhostUserTxBench(0.1)) {
            InvalidBenchOptionException e = assertThrows(InvalidBenchOptionException.class,
                    () -> bench.run(BenchConfig.defaults().with("barriers", "strong")));
            assertEquals(List.of("barriers"), e.options());
            assertEquals("barriers strong: a vhost-user run takes only weak", e.getMessage());
        }
    }

    @Test
    void aUsersValueWithAPercentSignIsNotAPlaceholder() {
        ExperimentRunner runner = new ExperimentRunner(1000, 2, 0, Set.of("50%s"));
        InvalidBenchOptionException e = assertThrows(InvalidBenchOptionException.class, runner::selected);
        assertEquals(List.of("only"), e.options());
        assertEquals("--only [50%s]", e.describe(name -> "--" + name).substring(0, "--only [50%s]".length()));
    }
}
