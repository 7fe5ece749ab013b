package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CI form of {@code experiments --quick}: every in-process ring row (the tap rows need root), with runs too
 * short to mean anything, so that each row runs end to end and its report has every column. Asserts the shape of
 * the report, never a figure.
 */
class ExperimentsCommandTest {
    private static final Set<String> VERDICTS = Set.of("reproduced", "opposite", "refuted", "inconclusive");

    @Test
    void aShortQuickRunReportsEveryRingRowWithItsHalfWidthAndAVerdict(@TempDir Path out) throws Exception {
        String[] r = execute("experiments", "--quick", "--only",
                "cached-avail-idx,lazy-avail-publish,barrier-strength,ring-format,in-order", "--runs", "2",
                "--bufs", "20000", "--warmup", "0", "--out", out.toString());
        assertEquals("0", r[0], r[1]);
        List<String> rows = Files.readAllLines(out.resolve("experiments.md")).stream()
                .filter(l -> l.startsWith("| ") && !l.startsWith("| experiment ")).toList();
        assertEquals(List.of("cached-avail-idx", "cached-avail-idx-toggle", "lazy-avail-publish",
                "lazy-avail-publish-adaptive", "lazy-avail-publish-notify", "barrier-strength", "barrier-strength-batch1",
                "barrier-strength-rr-poll-1p", "barrier-strength-rr-notify-1p", "barrier-strength-rr-poll-2p",
                "barrier-strength-rr-notify-2p", "packed-vs-split", "in-order", "in-order-lazy", "in-order-packed"),
                rows.stream().map(l -> l.split(" \\| ")[0].substring(2)).toList());
        for (String row : rows) {
            String[] c = row.substring(2, row.length() - 2).split(" \\| ");
            assertEquals(16, c.length, row);
            assertEquals("2", c[10], row);
            // "inconclusive at ±x%", "reproduced (smaller effect than claimed)": the verdict is the first word
            String verdict = c[15].startsWith("not measured") ? "not measured" : c[15].split(" ")[0];
            assertTrue(VERDICTS.contains(verdict) || c[8].equals("n/a") && verdict.equals("not measured"), row);
            assertTrue(c[13].contains(" → "), "CPU per buffer, A to B: " + row);
        }
        assertTrue(rows.get(1).contains("avail.idx reads/buffer "), "lesson 1 shows the mechanism: " + rows.get(1));
        String md = Files.readString(out.resolve("experiments.md"));
        for (String p : List.of("one process", "two processes")) {
            // the notes of each request-response row give its round trips, A to B
            assertTrue(md.contains("  - " + p + ", 200 transactions a run; round trip p50 ns "), md);
        }
        String json = Files.readString(out.resolve("experiments.json"));
        assertTrue(json.contains("\"round_trip_p99_ns\"") && json.contains("\"processes\": 2"), "request-response rows");
        for (String key : List.of("\"half_width\"", "\"outliers\"", "\"per_pair\"", "\"order\": \"BA\"", "\"probe_ns\"",
                "\"cpu_ns_per_buffer\"", "\"avail_idx_reads_per_buffer\"", "\"stopped\": \"fixed\"")) {
            assertTrue(json.contains(key), key);
        }
        assertTrue(Files.size(out.resolve("cached-avail-idx-toggle.png")) > 0);
    }

    @Test
    void anAdaptiveTargetOutOfRangeIsReportedByItsFlag() {
        String[] r = execute("experiments", "--half-width", "0");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--half-width must be in (0, 100) percent, got 0.0"), r[1]);
    }
}
