package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** CPU affinity of the calling thread: sched_setaffinity / sched_getaffinity / sched_getcpu. */
public final class Affinity {
    private Affinity() {
    }

    private static final int MASK_BYTES = 128; // 1024 CPUs, glibc's cpu_set_t
    private static final MethodHandle SET = Native.downcallErrno("sched_setaffinity", JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS);
    private static final MethodHandle GET = Native.downcallErrno("sched_getaffinity", JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS);
    private static final MethodHandle GETCPU = Native.downcall("sched_getcpu", JAVA_INT);

    /** Restricts the calling thread to {@code cpu}. */
    public static void pinCurrentThread(int cpu) {
        if (cpu < 0 || cpu >= MASK_BYTES * 8) {
            throw new IllegalArgumentException("cpu " + cpu + " out of range [0, " + MASK_BYTES * 8 + ")");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            mask.set(java.lang.foreign.ValueLayout.JAVA_BYTE, cpu / 8, (byte) (1 << (cpu % 8)));
            Native.call("sched_setaffinity(cpu " + cpu + ")", st -> (int) SET.invokeExact(st, 0, (long) MASK_BYTES, mask));
        }
    }

    /** CPUs the calling thread may run on. */
    public static int[] allowedCpus() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            Native.call("sched_getaffinity", st -> (int) GET.invokeExact(st, 0, (long) MASK_BYTES, mask));
            int n = 0;
            int[] cpus = new int[MASK_BYTES * 8];
            for (int cpu = 0; cpu < MASK_BYTES * 8; cpu++) {
                if ((mask.get(java.lang.foreign.ValueLayout.JAVA_BYTE, cpu / 8) & (1 << (cpu % 8))) != 0) {
                    cpus[n++] = cpu;
                }
            }
            return java.util.Arrays.copyOf(cpus, n);
        }
    }

    /** CPU the calling thread runs on right now. */
    public static int currentCpu() {
        try {
            return (int) GETCPU.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("sched_getcpu downcall failed", t);
        }
    }
}
