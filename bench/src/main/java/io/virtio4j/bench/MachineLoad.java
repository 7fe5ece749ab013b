package io.virtio4j.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How busy the machine's CPUs are, from the aggregate line of {@code /proc/stat}: read before an experiment (and
 * after it, once its own threads are gone) so a report says whether other processes were competing for the two
 * CPUs its spinning threads need.
 */
public final class MachineLoad {
    private static final Path STAT = Path.of("/proc/stat");

    private MachineLoad() {
    }

    /** Fraction of CPU time spent busy over the next {@code millis}, all CPUs together; NaN without /proc/stat. */
    public static double busyFraction(long millis) throws InterruptedException {
        try {
            String before = Files.readAllLines(STAT).getFirst();
            Thread.sleep(millis);
            String after = Files.readAllLines(STAT).getFirst();
            return busyFraction(before, after);
        } catch (IOException | RuntimeException e) {
            return Double.NaN; // not Linux, or a format this parser does not know: the report says n/a
        }
    }

    /**
     * Busy fraction between two aggregate {@code cpu} lines ({@code cpu user nice system idle iowait irq softirq
     * steal ...}, in ticks): everything but idle and iowait counts as busy.
     */
    static double busyFraction(String before, String after) {
        long[] a = ticks(before);
        long[] b = ticks(after);
        long total = 0;
        long idle = 0;
        for (int i = 0; i < Math.min(a.length, b.length); i++) {
            long d = b[i] - a[i];
            total += d;
            if (i == 3 || i == 4) {
                idle += d;
            }
        }
        return total > 0 ? (double) (total - idle) / total : Double.NaN;
    }

    private static long[] ticks(String line) {
        String[] f = line.trim().split("\\s+");
        if (!f[0].equals("cpu") || f.length < 6) {
            throw new IllegalArgumentException("not the aggregate cpu line of /proc/stat: " + line);
        }
        // guest and guest_nice (fields 9 and 10) are already counted in user and nice: leave them out
        long[] t = new long[Math.min(f.length - 1, 8)];
        for (int i = 0; i < t.length; i++) {
            t[i] = Long.parseLong(f[i + 1]);
        }
        return t;
    }
}
