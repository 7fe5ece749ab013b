package io.virtio4j.bench.jmh;

import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.IterationResultMetaData;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Wall-clock scores on a shared 2-vCPU machine include the time other processes held the CPU; this profiler
 * reports, per iteration, what the benchmark JVM itself consumed ({@code -prof io.virtio4j.bench.jmh.CpuTimeProfiler}):
 * <ul>
 *   <li>{@code cpu.util}: process CPU time / wall time, in CPUs. About 1.0 for a single-threaded benchmark that
 *       had a CPU to itself; less means it waited for one and its ns/op is inflated by about 1/cpu.util.</li>
 *   <li>{@code cpu.time.norm}: process CPU time per operation, in ns: the code cost with the waiting removed
 *       (still inflated a little by cache and hyper-thread sharing, and it includes JIT and JMH threads, which
 *       are idle in a warmed-up measurement iteration).</li>
 * </ul>
 */
public final class CpuTimeProfiler implements InternalProfiler {
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private long cpuStart;
    private long wallStart;

    @Override
    public String getDescription() {
        return "process CPU time per operation and CPUs used per iteration (for noisy, shared machines)";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        cpuStart = os.getProcessCpuTime();
        wallStart = System.nanoTime();
    }

    @Override
    public List<Result> afterIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams,
                                       IterationResult result) {
        long cpu = os.getProcessCpuTime() - cpuStart;
        long wall = System.nanoTime() - wallStart;
        List<Result> out = new ArrayList<>(2);
        if (cpu < 0 || wall <= 0) {
            return out; // process CPU time not supported here
        }
        out.add(new ScalarResult("cpu.util", (double) cpu / wall, "CPUs", AggregationPolicy.AVG));
        IterationResultMetaData md = result.getMetadata();
        if (md != null && md.getAllOps() > 0) {
            out.add(new ScalarResult("cpu.time.norm", (double) cpu / md.getAllOps(), "ns/op", AggregationPolicy.AVG));
        }
        return out;
    }
}
