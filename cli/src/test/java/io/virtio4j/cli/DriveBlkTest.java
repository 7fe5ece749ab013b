package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;
import picocli.CommandLine.TypeConversionException;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code drive blk}'s options: fio's sizes, and one-line errors naming the flag and the value. */
class DriveBlkTest {

    @ParameterizedTest
    @CsvSource({"4096,4096", "4k,4096", "4K,4096", "128k,131072", "1m,1048576", "2g,2147483648", "1t,1099511627776",
            "64MiB,67108864", "512b,512"})
    void sizesReadLikeFios(String text, long bytes) {
        assertEquals(bytes, SizeConverter.parse(text));
    }

    @ParameterizedTest
    @CsvSource({"-4k", "k", "4x", "9000000000000000000k", "''"})
    void aSizeThatIsNoneIsRefused(String text) {
        assertThrows(TypeConversionException.class, () -> SizeConverter.parse(text));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--bs|1000|--bs: 1000 is not a positive multiple of 512 bytes",
            "--bs|4x|Invalid value for option '--bs': '4x' is not a size",
            "--rw|randtrim|Invalid value for option '--rw': 'randtrim' is not read | write | randread | randwrite | randrw",
            "--rwmixread|101|--rwmixread: 101 is not in [0, 100]",
            "--iodepth|0|--iodepth: 0 is not in [1, 65536]",
            "--queues|0|--queues: 0 is not in [1, 256]",
            "--queue-size|250|--queue-size: 250 is not a valid split queue size",
            "--duration|0|--duration: 0.0 is not in (0, 1000000] seconds",
            "--runtime|0|--duration: 0.0 is not in (0, 1000000] seconds",
            "--stall-timeout|0|--stall-timeout: 0.0 is not in (0, 1000000] seconds",
            "--connect-timeout|0|--connect-timeout: 0 is not a positive number of seconds",
            "--reconnect-timeout|0|--reconnect-timeout: 0 is not a positive number of seconds",
            "--size|6k|--size: 6144 is not a multiple of --bs 4096"})
    void aBadValueIsReportedByItsFlagBeforeAnythingConnects(String flag, String value, String message) {
        // the socket does not exist: a check that came after connecting would report that instead
        String[] r = execute("drive", "blk", "--socket", "/nonexistent/blk.sock", flag, value);
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].lines().findFirst().orElseThrow().startsWith(message), r[1]);
    }

    /** The driver's configuration is made whole: a packed ring of 100 and a ring smaller than the default depth. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"packed|100|100", "split|16|8"})
    void anyValidRingAndDepthReachTheSocket(String ring, String queueSize, String depth) {
        String[] r = execute("drive", "blk", "--socket", "/nonexistent/blk.sock", "--ring", ring, "--queue-size", queueSize,
                "--iodepth", depth, "--connect-timeout", "1");
        assertTrue(r[1].contains("/nonexistent/blk.sock") && r[1].contains("ENOENT"), r[1]);
    }

    @Test
    void driveNetKeepsItsOptionsBesideBlk() {
        CommandLine.ParseResult parsed = new CommandLine(new Main())
                .parseArgs("drive", "blk", "--socket", "/x", "--rw", "randrw", "--rwmixread", "70", "--bs", "128k",
                        "--iodepth", "8", "--queues", "2", "--verify", "--indirect", "off", "--event-idx", "off");
        DriveBlk blk = (DriveBlk) parsed.subcommand().subcommand().commandSpec().userObject();
        assertEquals(DriveBlk.Rw.RANDRW, blk.rw);
        assertEquals(70, blk.rwmixread);
        assertEquals(131072, blk.bs);
        assertEquals(2, blk.queues);
        assertTrue(blk.verify);
        assertTrue(!blk.indirect && !blk.eventIdx);
        assertEquals("net", new CommandLine(new Main()).parseArgs("drive", "net", "--socket", "/x")
                .subcommand().subcommand().commandSpec().name());
    }
}
