package io.virtio4j.cli;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
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
 * The CI form of {@code experiments --quick}: every in-process ring row and every vhost-user row (the tap rows need
 * root), with runs too short to mean anything, so that each row runs end to end and its report has every column.
 * Asserts the shape of the report and counts that hold at any speed, never a speed.
 */
class ExperimentsCommandTest {
    private static final Set<String> VERDICTS = Set.of("reproduced", "opposite", "refuted", "inconclusive");

    @Test
    void aShortQuickRunReportsEveryRingAndVhostUserRowWithItsHalfWidthAndAVerdict(@TempDir Path out) throws Exception {
        String[] r = execute("experiments", "--quick", "--only",
                "cached-avail-idx,lazy-avail-publish,barrier-strength,ring-format,in-order", "--runs", "2",
                "--bufs", "20000", "--warmup", "0", "--vhost-seconds", "0.2", "--out", out.toString());
        assertEquals("0", r[0], r[1]);
        List<String> rows = Files.readAllLines(out.resolve("experiments.md")).stream()
                .filter(l -> l.startsWith("| ") && !l.startsWith("| experiment ")).toList();
        assertEquals(List.of("cached-avail-idx", "cached-avail-idx-toggle", "lazy-avail-publish",
                "lazy-avail-publish-adaptive", "lazy-avail-publish-notify", "lazy-avail-publish-vhost-user",
                "lazy-avail-publish-vhost-user-adaptive", "lazy-avail-publish-vhost-user-notify", "barrier-strength",
                "barrier-strength-batch1",
                "barrier-strength-rr-poll-1p", "barrier-strength-rr-notify-1p", "barrier-strength-rr-poll-2p",
                "barrier-strength-rr-notify-2p", "packed-vs-split", "in-order", "in-order-lazy", "in-order-packed",
                "in-order-vhost-user", "in-order-vhost-user-packed", "in-order-vhost-user-lazy"),
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
        // the vhost-user rows of IN_ORDER: every run went as its side asked, as the back-end negotiated it, and exact
        for (JsonElement element : JsonParser.parseString(json).getAsJsonObject().getAsJsonArray("experiments")) {
            JsonObject row = element.getAsJsonObject();
            String id = row.get("id").getAsString();
            if (!id.startsWith("in-order-vhost-user")) {
                continue;
            }
            assertEquals("vhost-user", row.get("backend").getAsString(), id);
            for (String side : List.of("a", "b")) {
                for (JsonElement e : row.getAsJsonObject("measured_runs").getAsJsonArray(side)) {
                    JsonObject run = e.getAsJsonObject();
                    assertEquals(side.equals("a") ? "off" : "on", run.get("in_order").getAsString(), id + ": " + run);
                    assertEquals(id.endsWith("packed") ? "packed" : "split", run.get("ring").getAsString(), id + ": " + run);
                    assertEquals(id.endsWith("lazy") ? "lazy" : "eager", run.get("publish").getAsString(), id + ": " + run);
                    assertEquals(run.get("tx").getAsLong(), run.get("backend_rx").getAsLong(), id + ": " + run);
                }
            }
        }
    }

    /**
     * The vhost-user rows of lesson 4 (the front-end library's driver into {@code serve net rxonly}, polling and
     * sleeping on kicks): each run's back-end received exactly the frames the driver sent, the row's configuration
     * holds only what the run follows, eager stores
     * {@code avail.idx} once per frame and lazy and adaptive at most that often and at least once per round of 64, a
     * kick never comes without a publication, and each row has its half-width, a verdict and its mechanism figures.
     */
    @Test
    void theVhostUserRowsCountEveryFrameExactlyAndGiveAVerdict(@TempDir Path out) throws Exception {
        List<String> ids = List.of("lazy-avail-publish-vhost-user", "lazy-avail-publish-vhost-user-adaptive",
                "lazy-avail-publish-vhost-user-notify");
        String[] r = execute("experiments", "--only", String.join(",", ids), "--runs", "2", "--warmup", "1",
                "--vhost-seconds", "0.2", "--out", out.toString());
        assertEquals("0", r[0], r[1]);
        JsonArray rows = JsonParser.parseString(Files.readString(out.resolve("experiments.json"))).getAsJsonObject()
                .getAsJsonArray("experiments");
        assertEquals(ids, rows.asList().stream().map(e -> e.getAsJsonObject().get("id").getAsString()).toList());
        for (JsonElement element : rows) {
            JsonObject row = element.getAsJsonObject();
            String id = row.get("id").getAsString();
            assertEquals("vhost-user", row.get("backend").getAsString(), id);
            assertEquals(2, row.get("pairs").getAsInt(), id);
            assertTrue(row.has("half_width"), id);
            assertEquals(id.endsWith("notify") ? "kicks_per_buffer" : "buffers_per_s", row.get("metric").getAsString(), id);
            String b = id.endsWith("adaptive") ? "adaptive" : "lazy";
            JsonObject config = row.getAsJsonObject("config");
            assertEquals(id.endsWith("notify") ? "notify" : "poll", config.get("notify").getAsString(), id);
            // only the options the run follows: none the back-end has as serve net builds it (barriers, bufs, ...)
            assertEquals(Set.of("queue-size", "ring", "batch", "buf-size", "event-idx", "in-order", "avail-publish",
                    "notify", "driver-cpu", "device-cpu"), config.keySet(), id);
            JsonObject runs = row.getAsJsonObject("measured_runs");
            // a ratio of kicks per frame has no interval when a run had no kick at all: only then "not measured"
            boolean kicklessRun = id.endsWith("notify") && List.of("a", "b").stream()
                    .flatMap(side -> runs.getAsJsonArray(side).asList().stream())
                    .anyMatch(e -> e.getAsJsonObject().get("kicks_per_frame").getAsDouble() == 0);
            String verdict = row.get("verdict").getAsString();
            assertTrue(VERDICTS.contains(verdict) || kicklessRun && verdict.equals("not measured"), id + ": " + verdict);
            for (String side : List.of("a", "b")) {
                JsonArray sideRuns = runs.getAsJsonArray(side);
                assertEquals(2, sideRuns.size(), id + " " + side);
                for (JsonElement e : sideRuns) {
                    JsonObject run = e.getAsJsonObject();
                    assertEquals(side.equals("a") ? "eager" : b, run.get("publish").getAsString(), id + ": " + run);
                    long tx = run.get("tx").getAsLong();
                    long windowFrames = run.get("window_frames").getAsLong();
                    assertEquals(tx, run.get("backend_rx").getAsLong(), "every frame sent was received: " + run);
                    assertTrue(windowFrames > 0 && windowFrames <= tx, id + ": " + run);
                    double publications = run.get("publications_per_frame").getAsDouble();
                    if (side.equals("a")) {
                        assertEquals(1.0, publications, "eager publishes every frame: " + run);
                    } else {
                        assertTrue(publications >= 1.0 / 64 && publications <= 1.0, id + ": " + run);
                    }
                    assertTrue(run.get("kicks_per_frame").getAsDouble() <= publications,
                            "a kick follows a publication of frames added since the last one: " + run);
                }
            }
            JsonObject figures = row.getAsJsonObject("figures");
            assertEquals(1.0, figures.getAsJsonObject("avail_idx_writes_per_buffer").get("a_median").getAsDouble(), id);
            assertTrue(figures.has("kicks_per_buffer"), id);
        }
        String md = Files.readString(out.resolve("experiments.md"));
        for (String id : ids) {
            String row = md.lines().filter(l -> l.startsWith("| " + id + " |")).findFirst().orElseThrow();
            assertTrue(row.contains("avail.idx writes/buffer 1.0000 → "), "the mechanism beside the effect: " + row);
        }
        assertTrue(md.contains("  - vhost-user, back-end serve net rxonly notify; avail.idx writes/buffer "), md);
        assertTrue(Files.size(out.resolve("lazy-avail-publish-vhost-user.png")) > 0);
    }

    @Test
    void aVhostUserWindowOutOfRangeIsRefusedByItsFlagBeforeAnyRowRuns() {
        // a ring row selected too: refused before it runs, not after
        String[] r = execute("experiments", "--only", "barrier-strength,lazy-avail-publish-vhost-user", "--vhost-seconds",
                "0");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--vhost-seconds must be in (0, 3600] seconds, got 0.0"), r[1]);
    }

    @Test
    void anAdaptiveTargetOutOfRangeIsReportedByItsFlag() {
        String[] r = execute("experiments", "--half-width", "0");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--half-width must be in (0, 100) percent, got 0.0"), r[1]);
    }
}
