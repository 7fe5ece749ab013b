package io.virtio4j.bench;

import io.virtio4j.os.Affinity;
import io.virtio4j.os.LinuxException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Measures the cache-line round trip between two CPUs: this VM flips between a "near" state (about 165 ns)
 * and a "far" state (about 680 ns), and every ring figure moves with it. Run before and after each
 * measured run so each figure says which state it ran in.
 */
public final class PingPongProbe {
    private static final VarHandle TURN;

    static {
        try {
            TURN = MethodHandles.lookup().findVarHandle(PingPongProbe.class, "turn", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through TURN
    private volatile long turn;

    private PingPongProbe() {
    }

    /** Median-free quick figure: mean nanoseconds per round trip over {@code rounds} round trips. */
    public static double roundTripNanos(int cpuA, int cpuB, int rounds) throws InterruptedException {
        PingPongProbe p = new PingPongProbe();
        Thread b = new Thread(() -> {
            pin(cpuB);
            for (long i = 1; i < 2L * rounds; i += 2) {
                while ((long) TURN.getAcquire(p) != i) {
                    Thread.onSpinWait();
                }
                TURN.setRelease(p, i + 1);
            }
        }, "probe-b");
        long[] elapsed = new long[1];
        Thread a = new Thread(() -> {
            pin(cpuA);
            long t0 = System.nanoTime();
            for (long i = 0; i < 2L * rounds; i += 2) {
                TURN.setRelease(p, i + 1);
                while ((long) TURN.getAcquire(p) != i + 2) {
                    Thread.onSpinWait();
                }
            }
            elapsed[0] = System.nanoTime() - t0;
        }, "probe-a");
        b.start();
        a.start();
        a.join();
        b.join();
        return (double) elapsed[0] / rounds;
    }

    private static void pin(int cpu) {
        if (cpu >= 0) {
            try {
                Affinity.pinCurrentThread(cpu);
            } catch (LinuxException | IllegalArgumentException e) {
                // unpinned probe is still a probe; the run reports its own pinning state
            }
        }
    }
}
