package io.virtio4j.bench;

import io.virtio4j.os.Affinity;
import io.virtio4j.os.LinuxException;

/** Pins the calling benchmark thread, or says why it could not. */
final class Pinning {
    private Pinning() {
    }

    /** Null when pinned (or not asked to: {@code cpu < 0}), else why not. */
    static String pin(int cpu, String who) {
        if (cpu < 0) {
            return null;
        }
        try {
            Affinity.pinCurrentThread(cpu);
            return null;
        } catch (LinuxException | IllegalArgumentException e) {
            return who + " not pinned (" + e.getMessage() + ")";
        }
    }

    static String describe(BenchConfig cfg, String driverError, String deviceError) {
        if (cfg.driverCpu() < 0 && cfg.deviceCpu() < 0) {
            return "not pinned";
        }
        if (driverError == null && deviceError == null) {
            return "pinned";
        }
        return ((driverError != null ? driverError : "") + " " + (deviceError != null ? deviceError : "")).trim();
    }
}
