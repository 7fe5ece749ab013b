package io.virtio4j.bench;

/** Runs one benchmark run of a configuration: in process ({@link RingBenchmark}) or across two processes. */
@FunctionalInterface
public interface BenchRunner {
    RunResult run(BenchConfig cfg) throws InterruptedException;

    /** Driver and device as two threads of this JVM. */
    BenchRunner IN_PROCESS = RingBenchmark::run;
}
