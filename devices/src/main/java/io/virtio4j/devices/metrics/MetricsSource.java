package io.virtio4j.devices.metrics;

/** Something that has metrics to show: a device, adding its families and samples to a scrape. */
@FunctionalInterface
public interface MetricsSource {
    /**
     * Adds this source's samples to {@code out}, labelled {@code device="<device>"}. Runs on the scraper's thread: it
     * reads counters, never waits for a queue thread.
     */
    void collect(PrometheusText out, String device);
}
