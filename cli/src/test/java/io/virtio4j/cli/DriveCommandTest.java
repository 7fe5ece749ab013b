package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code drive net}'s options: one-line errors naming the flag and the value, and a help with an example. */
class DriveCommandTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--frame-size|20|--frame-size: 20 is not in [60, 2032]",
            "--mode|rxonly|--mode: rxonly is not txonly or echo",
            "--queue-size|250|--queue-size: 250 is not a valid split queue size",
            "--packets|-1|--packets: -1 is not in [1, 2147483647]",
            "--ring|twisted|Invalid value for option '--ring': 'twisted' is not split | packed",
            "--avail-publish|sometimes|Invalid value for option '--avail-publish': 'sometimes' is not one of eager | lazy | adaptive",
            "--warmup|-1|--warmup: -1.0 is not in [0, 3600] seconds"})
    void aBadValueIsReportedByItsFlagBeforeAnythingConnects(String flag, String value, String message) {
        // the socket does not exist: a check that came after connecting would report that instead
        String[] r = execute("drive", "net", "--socket", "/nonexistent/vhost.sock", flag, value);
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].lines().findFirst().orElseThrow().startsWith(message), r[1]);
    }

    @Test
    void aPackedRingTakesASizeThatIsNoPowerOfTwo() {
        CommandLine.ParseResult parsed = new CommandLine(new Main())
                .parseArgs("drive", "net", "--socket", "/x", "--ring", "packed", "--queue-size", "250", "--in-order", "on");
        DriveCommand.Net net = (DriveCommand.Net) parsed.subcommand().subcommand().commandSpec().userObject();
        assertTrue(net.ring.isValidQueueSize(net.queueSize));
        assertTrue(net.inOrder);
    }

    @Test
    void helpShowsAnExampleAndNoPicocliWarning() throws Exception {
        // a fresh JVM: picocli prints its format warnings to the stderr it captured when it was loaded
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "drive", "net", "--help");
        Process p = new ProcessBuilder(cmd).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), err);
        assertEquals("", err);
        assertTrue(out.contains("Example: virtio4j drive net --socket"), out);
    }
}
