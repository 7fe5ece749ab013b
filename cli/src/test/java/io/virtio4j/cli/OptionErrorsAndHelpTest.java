package io.virtio4j.cli;

import io.virtio4j.bench.BenchConfig;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The command line reports the library's option errors by its own flags, every error in one line naming the value,
 * its help renders cleanly and ends with an example that this build accepts, and the commands spell a shared idea
 * the same way.
 */
class OptionErrorsAndHelpTest {
    /** Each shared idea's flag and the commands that take it (the audit of issue 15; README "Command line"). */
    private static final Map<String, List<String>> SHARED_FLAGS = new LinkedHashMap<>();

    static {
        SHARED_FLAGS.put("--queue-size", List.of("bench", "drive net", "drive blk"));
        SHARED_FLAGS.put("--queues", List.of("serve net", "serve blk", "drive blk"));
        SHARED_FLAGS.put("--ring", List.of("bench", "drive net", "drive blk"));
        SHARED_FLAGS.put("--in-order", List.of("bench", "drive net"));
        SHARED_FLAGS.put("--indirect", List.of("bench", "drive blk"));
        SHARED_FLAGS.put("--event-idx", List.of("bench", "drive blk"));
        SHARED_FLAGS.put("--inflight", List.of("bench", "drive blk"));
        SHARED_FLAGS.put("--barriers", List.of("bench", "serve net"));
        SHARED_FLAGS.put("--cached-avail", List.of("bench", "serve net"));
        SHARED_FLAGS.put("--avail-publish", List.of("bench", "drive net"));
        SHARED_FLAGS.put("--notify", List.of("bench", "serve net", "serve blk", "serve rng"));
        SHARED_FLAGS.put("--hybrid-spin-ns", List.of("bench", "serve net", "serve blk", "serve rng"));
        SHARED_FLAGS.put("--cpu", List.of("serve net", "serve blk", "serve rng"));
        SHARED_FLAGS.put("--socket", List.of("serve net", "serve blk", "serve rng", "drive net", "drive blk"));
        SHARED_FLAGS.put("--socket-path", List.of("serve net", "serve blk", "serve rng", "drive net", "drive blk"));
        SHARED_FLAGS.put("--duration", List.of("drive net", "drive blk"));
        SHARED_FLAGS.put("--iodepth", List.of("serve blk", "drive blk"));
        SHARED_FLAGS.put("--weight", List.of("serve net", "serve blk"));
        SHARED_FLAGS.put("--stats-period", List.of("serve net", "serve blk", "serve rng"));
        SHARED_FLAGS.put("--connect-timeout", List.of("drive net", "drive blk"));
        SHARED_FLAGS.put("--verify", List.of("bench", "drive blk"));
        SHARED_FLAGS.put("--json", List.of("bench", "drive blk"));
        SHARED_FLAGS.put("--bufs", List.of("bench", "experiments"));
        SHARED_FLAGS.put("--runs", List.of("bench", "experiments"));
        SHARED_FLAGS.put("--warmup", List.of("bench", "experiments"));
    }

    /** Spellings retired for the shared ones: no command takes them any more, visibly or not. */
    private static final Map<String, List<String>> RETIRED_FLAGS = Map.of(
            "--ring-size", List.of("bench"), // --queue-size
            "--no-event-idx", List.of("bench"), // --event-idx off
            "--mode", List.of("bench"), // --notify (serve net's and drive net's --mode say what they do with frames)
            "--depth", List.of("serve blk")); // --iodepth

    /** Every command of the tree, the root and picocli's help included. */
    private static List<CommandLine> commands() {
        List<CommandLine> all = new ArrayList<>();
        List<CommandLine> todo = new ArrayList<>(List.of(Main.commandLine()));
        while (!todo.isEmpty()) {
            CommandLine c = todo.removeLast();
            all.add(c);
            todo.addAll(c.getSubcommands().values());
        }
        return all;
    }

    private static CommandLine command(String path) {
        CommandLine c = Main.commandLine();
        for (String name : path.split(" ")) {
            c = c.getSubcommands().get(name);
            assertNotNull(c, "no command " + path);
        }
        return c;
    }

    @Test
    void sharedIdeasHaveOneFlagEverywhere() {
        SHARED_FLAGS.forEach((flag, paths) -> {
            for (String path : paths) {
                assertNotNull(command(path).getCommandSpec().findOption(flag), "virtio4j " + path + " takes " + flag);
            }
        });
        RETIRED_FLAGS.forEach((flag, paths) -> {
            for (String path : paths) {
                assertNull(command(path).getCommandSpec().findOption(flag), "virtio4j " + path + " still takes " + flag);
            }
        });
    }

    /** A switch of a feature or a policy takes on|off, always a value; an action is a bare flag. */
    @Test
    void everyOnOffOptionTakesExactlyOneValue() {
        int onOff = 0;
        for (CommandLine c : commands()) {
            for (CommandLine.Model.OptionSpec o : c.getCommandSpec().options()) {
                if ("on|off".equals(o.paramLabel())) {
                    onOff++;
                    assertEquals(CommandLine.Range.valueOf("1"), o.arity(),
                            c.getCommandSpec().qualifiedName() + " " + o.longestName());
                }
            }
        }
        assertTrue(onOff >= 10, "the on|off options found: " + onOff);
    }

    @Test
    void everyCommandsHelpEndsWithAnExampleThisBuildAccepts() {
        List<CommandLine> all = commands();
        assertTrue(all.size() >= 10, "commands found: " + all.size());
        for (CommandLine c : all) {
            String name = c.getCommandSpec().qualifiedName();
            String usage = c.getUsageMessage(CommandLine.Help.Ansi.OFF);
            List<String> lines = usage.lines().toList();
            List<String> examples = lines.stream().filter(l -> l.startsWith("Example: ")).toList();
            assertEquals(1, examples.size(), name + " --help shows one example line:\n" + usage);
            int at = lines.indexOf(examples.getFirst());
            assertTrue(at == lines.size() - 1 || lines.get(at + 1).isBlank(),
                    name + "'s example is wrapped (keep it within the usage width):\n" + usage);
            String example = examples.getFirst().substring("Example: ".length());
            assertTrue((example + " ").startsWith(name + " "), name + "'s example runs it: " + example);
            // a renamed option would fail here: the example is a command line this build parses
            String[] args = example.substring("virtio4j ".length()).split(" ");
            CommandLine.ParseResult parsed = Main.commandLine().parseArgs(args);
            while (parsed.hasSubcommand()) {
                parsed = parsed.subcommand();
            }
            assertTrue(parsed.unmatched().isEmpty() || name.endsWith(" jmh"), name + ": " + parsed.unmatched());
        }
    }

    /**
     * One line on stderr, exit status 2, naming the value, for every command: an unknown option (with picocli's
     * suggestion), a value of the wrong type, a value out of range, a missing subcommand, a run that fails.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--no-such-flag|Unknown option: '--no-such-flag'",
            "bench --no-such-flag|Unknown option: '--no-such-flag'",
            "bench --ring-size 64|Unknown options: '--ring-size', '64'; did you mean --ring?",
            "bench --queue-size x|'x'",
            "bench --buf-size 0|--buf-size must be >= 1, got 0",
            "bench --runs 0|--runs must be >= 1, got 0",
            "bench --processes 3|--processes must be 1 or 2, got 3",
            "bench --indirect maybe|'maybe'",
            "experiments --no-such-flag|Unknown option: '--no-such-flag'",
            "experiments --runs x|'x'",
            "serve|Missing required subcommand: net, blk",
            "serve net --no-such-flag|Unknown option: '--no-such-flag'",
            "serve net --queues x|'x'",
            "serve blk --socket-path /nonexistent/x.sock --null 1G --iodepth 0|--iodepth=0: must be in [1, 4096]",
            "serve blk --depth 8|Unknown options: '--depth', '8'",
            "drive|Missing required subcommand: net, blk",
            "drive net --socket /nonexistent/x.sock --frame-size 20|--frame-size: 20",
            "drive net --frame-size 64|Missing required option: '--socket-path=PATH'",
            "drive blk --socket /nonexistent/x.sock --bs 1000|--bs: 1000",
            "drive blk --socket /nonexistent/x.sock --connect-timeout 1|/nonexistent/x.sock",
            "help no-such-command|no-such-command"})
    void everyCommandReportsAnErrorInOneLineWithTheValue(String args, String expected) {
        String[] r = execute(args.split(" "));
        assertEquals("2", r[0], r[1]);
        assertEquals(1, r[1].lines().count(), "one line:\n" + r[1]);
        assertTrue(r[1].contains(expected), r[1]);
    }

    @Test
    void aBenchOptionOutOfRangeIsReportedByItsFlag() {
        String[] r = execute("bench", "--buf-size", "0");
        assertEquals("2", r[0]);
        assertEquals("--buf-size must be >= 1, got 0", r[1].lines().findFirst().orElseThrow(), r[1]);
    }

    @Test
    void everyOptionARuleNamesIsReportedByItsFlag() {
        String[] r = execute("bench", "--indirect", "on", "--chain", "1");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--indirect needs --chain in [2, --queue-size], got 1 with a ring of 256"), r[1]);
    }

    @Test
    void aCompareValueOutOfRangeIsReportedByItsFlag() {
        String[] r = execute("bench", "--compare", "queue-size=3,8");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--queue-size must be a power of two in [1, 32768], got 3"), r[1]);
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
        BenchConfig c = bench("--ring", "packed", "--in-order", "on", "--queue-size", "100").config();
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
        String[] r = execute("bench", "--ring", "packed", "--queue-size", "0");
        assertEquals("2", r[0]);
        assertEquals("--queue-size must be in [1, 32768] with --ring packed, got 0",
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
    void flightRecordingTakesOnOrOffAndIsACompareKey() {
        assertFalse(bench().config().flightRecording(), "off by default");
        assertTrue(bench("--flight-recording", "on").config().flightRecording());
        assertThrows(CommandLine.ParameterException.class, () -> bench("--flight-recording", "maybe"));
        BenchCommand cmp = bench("--compare", "flight-recording=off,on");
        BenchCommand.Comparison c = cmp.comparison(cmp.config());
        assertFalse(c.a().flightRecording());
        assertTrue(c.b().flightRecording());
        assertEquals(c.a().with("flight-recording", "on"), c.b(), "only flight-recording differs");
        assertEquals("on", c.b().toMap().get("flight-recording"), "the JSON report's config records it");
        assertTrue(c.b().describe().endsWith(", flight-recording"), c.b().describe());
    }

    @Test
    void flightRecordingSettingsAreAJdkConfigurationOrAReadableFile() {
        assertEquals("default", bench().config().flightRecordingSettings(), "the JDK's default by default");
        assertEquals("profile", bench("--flight-recording-settings", "profile").config().flightRecordingSettings());
        String ours = "../share/virtio4j/jfr/virtio4j.jfc";
        BenchCommand cmp = bench("--compare", "flight-recording=off,on", "--flight-recording-settings", ours);
        BenchCommand.Comparison c = cmp.comparison(cmp.config());
        assertEquals(ours, c.b().flightRecordingSettings(), "both sides keep the settings; only the recording differs");
        assertEquals(ours, c.b().toMap().get("flight-recording-settings"), "the JSON report's config records it");
        assertTrue(c.b().describe().endsWith(", flight-recording (" + ours + ")"), c.b().describe());
        CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
                () -> bench("--flight-recording-settings", "/nonexistent/x.jfc").config());
        assertTrue(e.getMessage().contains("--flight-recording-settings")
                && e.getMessage().contains("/nonexistent/x.jfc"), e.getMessage());
    }

    @Test
    void aFlightRecordingAcrossTwoProcessesIsRefusedByItsFlagsBeforeAnythingRuns() {
        // the recording would watch the driver's JVM only: refused by the flags, and before the device's JVM starts
        // and side A runs (bench prints its header to standard output before the first run: nothing may come)
        java.io.PrintStream stdout = System.out;
        java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
        String[] r;
        try {
            System.setOut(new java.io.PrintStream(printed, true, java.nio.charset.StandardCharsets.UTF_8));
            r = execute("bench", "--processes", "2", "--bufs", "1000", "--compare", "flight-recording=off,on");
        } finally {
            System.setOut(stdout);
        }
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--flight-recording runs in process only, not with --processes 2"), r[1]);
        assertEquals("", printed.toString(java.nio.charset.StandardCharsets.UTF_8), "nothing ran");
    }

    @Test
    void aCompareSideTheRingFormatRefusesIsReportedByItsFlags() {
        // a packed ring of 48 is fine; the split side of the comparison is not
        String[] r = execute("bench", "--ring", "packed", "--queue-size", "48", "--compare", "ring=packed,split");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--queue-size must be a power of two in [1, 32768], got 48"), r[1]);
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
