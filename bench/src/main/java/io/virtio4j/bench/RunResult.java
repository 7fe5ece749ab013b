package io.virtio4j.bench;

import io.virtio4j.core.stats.QueueCounters;

/**
 * What one measured run produced.
 *
 * @param buffers        buffers that completed the round trip
 * @param elapsedNanos   wall time from the start barrier to the driver reaping the last buffer
 * @param driverCpuNanos CPU time of the driver thread
 * @param deviceCpuNanos CPU time of the device thread
 * @param driver         driver-side queue counters
 * @param device         device-side queue counters
 * @param driverSpurious driver wake-ups that found no used buffer
 * @param deviceSpurious device wake-ups that found no available buffer
 * @param gcCount        garbage collections during the run (whole JVM)
 * @param allocatedBytes bytes allocated by the driver and device threads during the run
 * @param pinning        "pinned" or why pinning was not possible
 * @param probeBeforeNanos cache-line ping-pong round trip between the two CPUs just before the run
 * @param probeAfterNanos  the same just after the run
 * @param dirtyPages     pages marked in the run's dirty log ({@code --dirty-log on}) when it ended; 0 without one
 * @param roundTrips     request-response ({@link TrafficPattern#RR}): the driver's round trip of every transaction,
 *                       from adding the request to taking the answer back; null for a stream run
 */
public record RunResult(long buffers, long elapsedNanos, long driverCpuNanos, long deviceCpuNanos,
                        QueueCounters driver, QueueCounters device, long driverSpurious, long deviceSpurious,
                        long gcCount, long allocatedBytes, String pinning,
                        double probeBeforeNanos, double probeAfterNanos, long dirtyPages,
                        LatencyHistogram roundTrips) {

    /** A run without round trips (a stream run, or a run of another kind of bench). */
    public RunResult(long buffers, long elapsedNanos, long driverCpuNanos, long deviceCpuNanos,
                     QueueCounters driver, QueueCounters device, long driverSpurious, long deviceSpurious,
                     long gcCount, long allocatedBytes, String pinning,
                     double probeBeforeNanos, double probeAfterNanos, long dirtyPages) {
        this(buffers, elapsedNanos, driverCpuNanos, deviceCpuNanos, driver, device, driverSpurious, deviceSpurious,
                gcCount, allocatedBytes, pinning, probeBeforeNanos, probeAfterNanos, dirtyPages, null);
    }

    public double buffersPerSecond() {
        return buffers * 1e9 / elapsedNanos;
    }

    public double nanosPerBuffer() {
        return (double) elapsedNanos / buffers;
    }

    public RunResult withProbes(double before, double after) {
        return new RunResult(buffers, elapsedNanos, driverCpuNanos, deviceCpuNanos, driver, device, driverSpurious,
                deviceSpurious, gcCount, allocatedBytes, pinning, before, after, dirtyPages, roundTrips);
    }

    /** The round trip at {@code percent} in nanoseconds; NaN for a run without round trips. */
    public double roundTripNanos(double percent) {
        return roundTrips == null ? Double.NaN : roundTrips.percentile(percent);
    }

    public double perBuffer(long count) {
        return (double) count / buffers;
    }
}
