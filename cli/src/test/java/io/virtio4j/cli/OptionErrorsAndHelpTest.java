package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The command line reports the library's option errors by its own flags, and its help renders cleanly. */
class OptionErrorsAndHelpTest {

    /** Runs {@code args} (the library's validation fails before any benchmark starts); returns exit code and stderr. */
    private static String[] execute(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new Main());
        cl.setErr(new PrintWriter(err, true));
        cl.setOut(new PrintWriter(new StringWriter(), true));
        int code = cl.execute(args);
        return new String[] {Integer.toString(code), err.toString()};
    }

    @Test
    void aBenchOptionOutOfRangeIsReportedByItsFlag() {
        String[] r = execute("bench", "--buf-size", "0");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--buf-size must be >= 1, got 0"), r[1]);
        assertFalse(r[1].contains("bufSize"), r[1]);
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
    void everyOptionDescriptionFormatsWithoutAPicocliWarning() {
        // picocli formats each description line with String.format and warns (then prints it raw) when that
        // fails, e.g. on a lone '%'
        assertDescriptionsFormat(new CommandLine(new Main()));
    }

    private static void assertDescriptionsFormat(CommandLine command) {
        for (OptionSpec o : command.getCommandSpec().options()) {
            for (String line : o.description()) {
                assertDoesNotThrow(() -> String.format(line), command.getCommandName() + " " + o.longestName() + ": " + line);
            }
        }
        command.getSubcommands().values().forEach(OptionErrorsAndHelpTest::assertDescriptionsFormat);
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
