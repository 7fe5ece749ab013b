package io.virtio4j.bench;

import io.virtio4j.core.stats.QueueCounters;
import io.virtio4j.devices.net.NetDevice;
import io.virtio4j.devices.net.NetStats;
import io.virtio4j.vhost.backend.InProcessBackend;

import java.lang.management.ManagementFactory;

/**
 * What the benches of a {@link NetDevice} served in this JVM to our own driver share ({@link NetPollBench},
 * {@link VhostUserTxBench}): the figures of queue pair 0 read at the start and the end of a measuring window, and the
 * end of the connection after a run.
 */
final class NetRun {
    private NetRun() {
    }

    /**
     * Figures of queue pair 0 and of the guest's thread, read at one edge of the measuring window.
     *
     * @param nanos       when (System.nanoTime)
     * @param stats       the device's statistics of pair 0 (over its life: a run reads differences)
     * @param workerCpu   CPU time of the pair's queue thread
     * @param workerAlloc bytes its queue thread allocated
     * @param guestCpu    CPU time of the guest's thread (the driver's sending or receiving thread)
     * @param gc          collections so far, all collectors
     * @param pinError    why the queue thread is not pinned, or null ({@link NetDevice#workerPinError})
     */
    record Window(long nanos, NetStats stats, long workerCpu, long workerAlloc, long guestCpu, long gc,
                  String pinError) {
        /** Reads them now; {@code guestThread} is the guest's thread's id. */
        static Window take(NetDevice device, long guestThread) {
            com.sun.management.ThreadMXBean t = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long worker = device.workerThreadId(0);
            if (worker < 0) {
                throw new BenchmarkFailedException("the back-end's queue thread is not running", null);
            }
            String pinError = device.workerPinError(0);
            long gc = RingBenchmark.gcCount();
            return new Window(System.nanoTime(), device.stats(0), t.getThreadCpuTime(worker),
                    t.getThreadAllocatedBytes(worker), t.getThreadCpuTime(guestThread), gc, pinError);
        }

        /**
         * The device side's counters since {@code start}, in the direction the run measures: packets from the guest
         * (its transmit ring, popped and used) or to it (its receive ring, filled and used) as buffers and
         * completions; the pair's used-buffer notifications and spurious wake-ups.
         */
        QueueCounters deviceSince(Window start, boolean fromGuest) {
            QueueCounters dev = new QueueCounters();
            dev.buffers = fromGuest ? stats.fromGuestPackets() - start.stats.fromGuestPackets()
                    : stats.toGuestPackets() - start.stats.toGuestPackets();
            dev.completions = dev.buffers;
            dev.notificationsSent = stats.notifications() - start.stats.notifications();
            dev.spuriousWakeups = stats.spuriousWakeups() - start.stats.spuriousWakeups();
            return dev;
        }

        /**
         * Why the queue thread was not pinned at either edge of the window, or null when it was at both; null also
         * when it was not asked to be.
         */
        String pinErrorSince(Window start) {
            return start.pinError != null ? start.pinError : pinError;
        }
    }

    /**
     * Waits for the connection of a run to end ({@link InProcessBackend#awaitEnd}). When the run already failed
     * ({@code primary} not null), a failure here is added to that one as suppressed: the run's own failure (a stall,
     * the driver's cause) is the one reported, not what it led to.
     */
    static void awaitEnd(InProcessBackend backend, Throwable primary) throws InterruptedException {
        try {
            backend.awaitEnd();
        } catch (IllegalStateException | InterruptedException e) {
            if (primary == null) {
                throw e;
            }
            primary.addSuppressed(e);
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
