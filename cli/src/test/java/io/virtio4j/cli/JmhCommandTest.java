package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class JmhCommandTest {

    private static List<String> passedThrough(String... jmhArgs) {
        String[] args = new String[jmhArgs.length + 1];
        args[0] = "jmh";
        System.arraycopy(jmhArgs, 0, args, 1, jmhArgs.length);
        CommandLine.ParseResult parsed = new CommandLine(new Main()).parseArgs(args);
        JmhCommand jmh = (JmhCommand) parsed.subcommand().commandSpec().userObject();
        return jmh.jmhArgs;
    }

    @Test
    void optionsValuesAndPatternsPassThroughInOrder() {
        List<String> in = List.of("-prof", "gc", "-f", "1", "-wi", "3", "-w", "1", "-i", "5", "-r", "1",
                "io.virtio4j.bench.jmh", "-p", "ordering=WEAK,STRONG", "-jvmArgsAppend", "-Xmx1g -XX:+UseParallelGC",
                "-rf", "json", "-h", "-l");
        assertEquals(in, passedThrough(in.toArray(String[]::new)));
    }

    @Test
    void noArgumentsPassNothing() {
        assertEquals(List.of(), passedThrough());
    }
}
