package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code bench --pattern rr}: its own shape by default, its round trips in the report, its rules named by flag. */
class BenchRequestResponseCommandTest {

    @Test
    void aRequestResponseRunTakesItsShapeAndReportsItsRoundTrips(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("rr.json");
        String[] r = execute("bench", "--pattern", "rr", "--bufs", "2000", "--runs", "1", "--warmup", "0",
                "--json", json.toString());
        assertEquals("0", r[0], r[1]);
        String j = Files.readString(json);
        for (String shape : new String[] {"\"pattern\": \"rr\"", "\"batch\": \"1\"", "\"chain\": \"2\"",
            "\"bufs\": \"2000\""}) {
            assertTrue(j.contains(shape), shape + " in " + j);
        }
        Matcher p50 = Pattern.compile("\"round_trip_p50_ns\": ([0-9.]+)").matcher(j);
        assertTrue(p50.find(), j);
        assertTrue(Double.parseDouble(p50.group(1)) > 0, p50.group());
        Matcher buffers = Pattern.compile("\"buffers_per_s\": ([0-9.E]+)").matcher(j);
        assertTrue(buffers.find() && Double.parseDouble(buffers.group(1)) > 0, j);
    }

    @Test
    void aBatchThatCannotBeOneInFlightIsReportedByBothFlags() {
        String[] r = execute("bench", "--pattern", "rr", "--batch", "4");
        assertEquals("2", r[0]);
        assertEquals("--batch must be 1 with --pattern rr (one buffer in flight), got 4",
                r[1].lines().findFirst().orElseThrow(), r[1]);
        r = execute("bench", "--pattern", "rr", "--chain", "1");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--chain must be >= 2 with --pattern rr"), r[1]);
        r = execute("bench", "--pattern", "ping");
        assertEquals("2", r[0]);
        assertTrue(r[1].contains("'ping' is not one of stream | rr"), r[1]);
    }
}
