package io.virtio4j.cli;

import io.virtio4j.bench.BenchConfig;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The command line reports the library's option errors by its own flags, and its help renders cleanly. */
class OptionErrorsAndHelpTest {

    @Test
    void aBenchOptionOutOfRangeIsReportedByItsFlag() {
        String[] r = execute("bench", "--buf-size", "0");
        assertEquals("2", r[0]);
        assertEquals("--buf-size must be >= 1, got 0", r[1].lines().findFirst().orElseThrow(), r[1]);
    }

    @Test
    void everyOptionARuleNamesIsReportedByItsFlag() {
        String[] r = execute("bench", "--indirect", "--chain", "1");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--indirect needs --chain in [2, --ring-size], got 1 with a ring of 256"), r[1]);
    }

    @Test
    void aCompareValueOutOfRangeIsReportedByItsFlag() {
        String[] r = execute("bench", "--compare", "ring-size=3,8");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--ring-size must be a power of two in [1, 32768], got 3"), r[1]);
    }

    @Test
    void anUnknownExperimentIsReportedByTheOnlyFlag() {
        String[] r = execute("experiments", "--only", "no-such-lesson");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--only [no-such-lesson] matches no experiment"), r[1]);
    }

    @Test
    void helpPrintsNoPicocliWarning() throws Exception {
        // picocli formats each description line with String.format and, when that fails (e.g. on a lone '%'),
        // prints the line raw and a warning to the stderr it captured when it was loaded: so a fresh JVM
        for (String[] command : new String[][] {{"bench", "--help"}, {"experiments", "--help"}, {"serve", "net", "--help"}, {"serve", "blk", "--help"},
                {"drive", "blk", "--help"}, {"paired", "--help"}}) {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
            cmd.addAll(List.of(command));
            Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), err);
            assertEquals("", err, String.join(" ", command));
        }
    }

    private static BenchCommand bench(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "bench";
        System.arraycopy(args, 0, all, 1, args.length);
        return (BenchCommand) new CommandLine(new Main()).parseArgs(all).subcommand().commandSpec().userObject();
    }

    @Test
    void ringAndInOrderReachTheConfiguration() {
        BenchConfig d = bench().config();
        assertEquals(RingFormat.SPLIT, d.ring());
        assertFalse(d.inOrder());
        BenchConfig c = bench("--ring", "packed", "--in-order", "on", "--ring-size", "100").config();
        assertEquals(RingFormat.PACKED, c.ring());
        assertTrue(c.inOrder());
        assertEquals(100, c.ringSize(), "a packed ring need not be a power of two");
        assertEquals(RingFormat.SPLIT, bench("--ring", "SPLIT").config().ring());
        assertThrows(CommandLine.ParameterException.class, () -> bench("--ring", "paced"));
        assertThrows(CommandLine.ParameterException.class, () -> bench("--in-order"));
        assertThrows(CommandLine.ParameterException.class, () -> bench("--in-order", "maybe"));
    }

    @Test
    void aPackedRingSizeOutOfRangeNamesBothFlags() {
        String[] r = execute("bench", "--ring", "packed", "--ring-size", "0");
        assertEquals("2", r[0]);
        assertEquals("--ring-size must be in [1, 32768] with --ring packed, got 0",
                r[1].lines().findFirst().orElseThrow(), r[1]);
    }

    @Test
    void ringAndInOrderAreCompareKeys() {
        BenchCommand ring = bench("--compare", "ring=split,packed", "--batch", "16");
        BenchCommand.Comparison c = ring.comparison(ring.config());
        assertEquals("ring", c.key());
        assertEquals(RingFormat.SPLIT, c.a().ring());
        assertEquals(RingFormat.PACKED, c.b().ring());
        assertEquals(c.a().with("ring", "packed"), c.b(), "only the ring differs");
        assertEquals(16, c.b().batch());

        BenchCommand order = bench("--compare", "in-order=off,on", "--ring", "packed");
        c = order.comparison(order.config());
        assertFalse(c.a().inOrder());
        assertTrue(c.b().inOrder());
        assertEquals(RingFormat.PACKED, c.a().ring());
        assertEquals(c.a().with("in-order", "on"), c.b(), "only in-order differs");
    }

    @Test
    void inflightTakesOnOrOffAndIsACompareKey() {
        assertFalse(bench().config().inflight(), "off by default");
        assertTrue(bench("--inflight", "on").config().inflight());
        assertThrows(CommandLine.ParameterException.class, () -> bench("--inflight"));
        BenchCommand cmp = bench("--compare", "inflight=off,on", "--ring", "packed");
        BenchCommand.Comparison c = cmp.comparison(cmp.config());
        assertFalse(c.a().inflight());
        assertTrue(c.b().inflight());
        assertEquals(c.a().with("inflight", "on"), c.b(), "only inflight differs");
        assertEquals("on", c.b().toMap().get("inflight"), "the JSON report's config records it");
        assertTrue(c.b().describe().contains("inflight on"), c.b().describe());
    }

    @Test
    void dirtyLogTakesOnOrOffAndIsACompareKey() {
        assertFalse(bench().config().dirtyLog(), "off by default");
        assertTrue(bench("--dirty-log", "on").config().dirtyLog());
        assertThrows(CommandLine.ParameterException.class, () -> bench("--dirty-log"));
        assertThrows(CommandLine.ParameterException.class, () -> bench("--dirty-log", "maybe"));
        BenchCommand cmp = bench("--compare", "dirty-log=off,on", "--ring", "packed");
        BenchCommand.Comparison c = cmp.comparison(cmp.config());
        assertFalse(c.a().dirtyLog());
        assertTrue(c.b().dirtyLog());
        assertEquals(c.a().with("dirty-log", "on"), c.b(), "only dirty-log differs");
        assertEquals("on", c.b().toMap().get("dirty-log"), "the JSON report's config records it");
        assertTrue(c.b().describe().contains("dirty-log on"), c.b().describe());
    }

    @Test
    void aCompareSideTheRingFormatRefusesIsReportedByItsFlags() {
        // a packed ring of 48 is fine; the split side of the comparison is not
        String[] r = execute("bench", "--ring", "packed", "--ring-size", "48", "--compare", "ring=packed,split");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--ring-size must be a power of two in [1, 32768], got 48"), r[1]);
    }

    @Test
    void cachedAvailTakesAValueAndSaysSo() {
        CommandLine cl = new CommandLine(new Main());
        for (CommandLine command : new CommandLine[] {cl.getSubcommands().get("bench"),
                cl.getSubcommands().get("serve").getSubcommands().get("net")}) {
            String usage = command.getUsageMessage(CommandLine.Help.Ansi.OFF);
            assertTrue(usage.contains("--cached-avail=on|off"), usage);
        }
        CommandLine.ParseResult parsed = new CommandLine(new Main()).parseArgs("bench", "--cached-avail", "off");
        assertFalse(((BenchCommand) parsed.subcommand().commandSpec().userObject()).cachedAvail);
        assertThrows(CommandLine.ParameterException.class,
                () -> new CommandLine(new Main()).parseArgs("bench", "--cached-avail"));
    }
}
