/**
 * JMH suite for the ring hot paths, split and packed; run it with {@code virtio4j jmh [JMH options] [regexp]}.
 *
 * <ul>
 *   <li>{@link io.virtio4j.bench.jmh.RingPathBenchmark}: one thread plays driver and device on one ring, so the
 *       figures are the code cost of each path (no cache line moves between CPUs). Every path is measured in
 *       steady state with no per-invocation setup: the other side of the ring is stood in for by a few plain
 *       stores into the shared ring memory, or by the real API in {@code cycle}.</li>
 *   <li>{@link io.virtio4j.bench.jmh.DuplexRingBenchmark}: a driver thread and a device thread busy-poll one
 *       ring (throughput, cache-line transfers included).</li>
 * </ul>
 *
 * <p>Everything is allocated in {@code @Setup}: the benchmark loops reuse one {@code ScatterGather}, a fixed
 * set of tokens and the queues' own flyweights, so {@code -prof gc} must show about 0 B/op.
 */
package io.virtio4j.bench.jmh;
