package io.virtio4j.devices.net;

import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.netlab.TapNamespace;

import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The receive side of the polling discipline when the guest posts no receive buffers while frames keep arriving
 * on the tap: the worker must sleep (CPU time bound, generous: this is no timing assertion), and wake when the
 * guest finally posts buffers.
 */
class TapPollingTest {
    /** Share of wall time the worker may burn while starved; a busy loop would be near 100%. */
    private static final double MAX_CPU_SHARE = 0.20;

    @BeforeAll
    static void taps() {
        TapRig.assumeTapsWork();
    }

    static Stream<TapPolling> disciplines() {
        return Stream.of(TapPolling.current(), TapPolling.old(), new TapPolling(true, TapPolling.TxPoll.ALWAYS));
    }

    /** Result of one starved period: worker CPU share over 2 s, and wake-ups since the frames started. */
    private record Starved(double cpuShare, long wakeups, NetStats stats) {
    }

    private static Starved starve(TapRig rig) throws Exception {
        // Frames arrive at 5000/s for 3 s; the guest posts nothing.
        long wakeups0 = rig.device.stats(0).wakeups();
        Process sender = rig.tool("send", TapNamespace.GUEST_IP, "5000", "15000", "5000", "64", "64");
        // The tap fills and the first frame waits in the worker for a buffer: wait for that (the sender is a process
        // whose start takes what it takes) before measuring the starved period.
        long started = System.nanoTime();
        while (rig.device.stats(0).rxRingEmpty() == 0) {
            assertTrue(System.nanoTime() - started < 20_000_000_000L, "no frame met the empty ring: " + rig.device.stats(0));
            Thread.sleep(5);
        }
        long cpu0 = rig.workerCpuNanos(0);
        long t0 = System.nanoTime();
        Thread.sleep(2000);
        long cpu = rig.workerCpuNanos(0) - cpu0;
        long wall = System.nanoTime() - t0;
        NetStats s = rig.device.stats(0);
        Starved result = new Starved((double) cpu / wall, s.wakeups() - wakeups0, s);

        // Now the guest posts buffers: the worker, asleep on the receive kick (or the tap), must deliver.
        NetDriver g = rig.guest;
        g.postRx(0);
        long deadline = System.nanoTime() + 10_000_000_000L;
        int frames = 0;
        while (frames == 0 && System.nanoTime() < deadline) {
            g.awaitRx(0, 100_000_000L);
            frames += g.receive(0, (f, l, n) -> { });
        }
        TapRig.finish(sender);
        assertTrue(frames > 0, "no frame delivered after the guest posted buffers: " + rig.device.stats(0));
        return result;
    }

    @ParameterizedTest
    @MethodSource("disciplines")
    void noBusyLoopWhileTheGuestPostsNoReceiveBuffers(TapPolling polling) throws Exception {
        try (TapRig rig = TapRig.start(1, polling, 64, NetDriver.Config.defaults())) {
            Starved s = starve(rig);
            assertTrue(s.stats().rxRingEmpty() > 0, "the worker met the empty ring: " + s.stats());
            assertTrue(s.cpuShare() < MAX_CPU_SHARE, String.format(
                    "worker used %.1f%% of a CPU while starved (%s): %s", 100 * s.cpuShare(), polling.describe(), s.stats()));
        }
    }

    /**
     * With rx polling stopped the starved worker sleeps on the guest's receive kick and the tap does not wake it;
     * with the tap always watched, frames arriving on it do (each one a spurious wake-up), until the tap's own
     * queue is full and it drops them before waking anyone.
     */
    @Test
    void stoppingRxPollingTakesTheTapOutOfTheWakeUpsWhileStarved() throws Exception {
        long withStop;
        long without;
        try (TapRig rig = TapRig.start(1, TapPolling.current(), 64, NetDriver.Config.defaults())) {
            withStop = starve(rig).wakeups();
        }
        try (TapRig rig = TapRig.start(1, TapPolling.old(), 64, NetDriver.Config.defaults())) {
            without = starve(rig).wakeups();
        }
        assertTrue(withStop <= 5, "rx-poll-stop on: wake-ups while starved " + withStop);
        assertTrue(without > withStop, "rx-poll-stop off should wake for arriving frames: " + without + " vs " + withStop);
    }
}
