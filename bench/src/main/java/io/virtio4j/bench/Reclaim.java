package io.virtio4j.bench;

/**
 * When the driver of a stream run ({@link TrafficPattern#STREAM}) takes back the buffers the device has used.
 *
 * <ul>
 *   <li>{@link #EAGER}: after every round of adds, whatever has come back (Linux {@code virtio_test} and
 *       {@code ringtest}). With a busy-polling device that keeps pace, each round reads {@code used.idx} just after
 *       the device stored it: a cross-CPU miss per round, and the line taken from the device, whose next store
 *       must take it back. At batch 1 that is a miss per buffer on each side, and the device, finding the ring empty
 *       as often as not, also reads {@code avail.idx} while the driver is storing it.</li>
 *   <li>{@link #LAZY}: only after a round that could not add a whole batch (the ring had no room for it, or the run
 *       had no buffer left to start), then everything that has come back, as DPDK's virtio driver frees transmit
 *       descriptors only when it runs short of them ({@code tx_free_thresh}). The ring stays full: the device finds a
 *       backlog behind its cached avail index and reads {@code avail.idx} once per backlog, and the driver reads
 *       {@code used.idx} once per many buffers instead of once per round. Nothing else changes: a buffer is added,
 *       published and kicked for as the other options say, and comes back exactly once.</li>
 * </ul>
 * Request-response runs ({@link TrafficPattern#RR}) have one buffer in flight and wait for it: the policy does not
 * apply to them.
 */
public enum Reclaim {
    EAGER,
    LAZY
}
