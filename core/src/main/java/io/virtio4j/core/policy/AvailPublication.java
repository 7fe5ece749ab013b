package io.virtio4j.core.policy;

/**
 * When the driver publishes {@code avail.idx}.
 *
 * <p>A device that busy-polls {@code avail.idx} pulls its cache line to its CPU on every poll; a driver that
 * writes the index on every add pulls it back. Publishing less often stops that fight over one line.
 */
public enum AvailPublication {
    /** Publish on every add (Linux {@code virtqueue_add} behaviour). */
    EAGER,
    /** Publish only in {@code kickPrepare()}: once per batch. */
    LAZY,
    /**
     * Publish at least every N adds. N drops to its minimum when a kick turned out to be needed (the device
     * is asleep and every buffer it could start on early matters) and grows back while kicks are suppressed
     * (the device is polling, and fewer publications mean less cache-line traffic).
     */
    ADAPTIVE
}
