package io.virtio4j.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code virtio4j jmh [JMH args...]}: runs the JMH suite shipped in the bench module, handing every argument,
 * in order and unchanged, to {@link org.openjdk.jmh.Main}.
 *
 * <p>The command declares no options and no positional parameters, so picocli matches nothing and collects the
 * whole command line in {@link #jmhArgs}; even {@code -h} goes to JMH ({@code virtio4j help jmh} shows this
 * command's help). Forked JMH JVMs take their class path from {@code java.class.path}, i.e. the runnable jar,
 * whose manifest Class-Path brings in {@code lib/}.
 */
@Command(name = "jmh", customSynopsis = "virtio4j jmh [JMH-ARG...]",
        description = {"Runs the JMH microbenchmarks of the ring hot paths (package io.virtio4j.bench.jmh), "
                + "passing every argument unchanged to JMH's own command line (see `virtio4j jmh -h`)."},
        footer = {"", "Example: virtio4j jmh -prof gc -f 1 -wi 3 -w 1 -i 5 -r 1 io.virtio4j.bench.jmh"})
public final class JmhCommand implements Callable<Integer> {

    @Unmatched
    List<String> jmhArgs = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        // JMH exits the JVM itself (status 1) on bad options or failed benchmarks; it returns after a good run
        org.openjdk.jmh.Main.main(jmhArgs.toArray(String[]::new));
        return 0;
    }
}
