package io.virtio4j.bench;

/**
 * What the driver of a ring benchmark run does.
 *
 * <ul>
 *   <li>{@link #STREAM}: keeps the ring as full as it can ({@code batch} buffers per kick), the throughput set-up of
 *       Linux {@code virtio_test}.</li>
 *   <li>{@link #RR}: request-response, as netperf's TCP_RR: one buffer in flight; the driver adds a request, kicks
 *       (or the device polls), the device echoes the request's payload into the buffer's writable element, the
 *       driver takes the answer back, checks it and adds the next. Latency-bound: every ordering point of both sides
 *       lies on the critical path of every transaction.</li>
 * </ul>
 */
public enum TrafficPattern {
    STREAM,
    RR
}
