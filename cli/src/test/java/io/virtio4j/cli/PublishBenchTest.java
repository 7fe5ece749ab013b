package io.virtio4j.cli;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static io.virtio4j.cli.PeerRuns.field;
import static io.virtio4j.cli.PeerRuns.word;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The short form of lesson lazy-avail-publish in its original set-up ({@code peers/bench-publish.sh}): {@code drive net}
 * transmitting into DPDK's {@code net_vhost} rxonly, into {@code serve net} busy-polling and into {@code serve net}
 * sleeping on kicks, eager, lazy and adaptive interleaved, with tiny counts. What it checks does not depend on speed:
 * every frame sent is a frame the back-end received, the order alternates between repetitions, each policy stores
 * {@code avail.idx} as often as it says, and the report has one paired summary per row, policy and figure.
 */
class PublishBenchTest {
    private static final long FRAMES = 3000;
    private static final int REPS = 2;
    private static final List<String> ROWS = List.of("dpdk", "serve-poll", "serve-notify");
    private static final List<String> FORWARD = List.of("eager", "lazy", "adaptive");

    @Test
    void everyFrameReachesEachBackEndAndEachPolicyPublishesAsItSays() throws IOException, InterruptedException {
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(10), List.of("bash",
                PeerRuns.script("bench-publish.sh").toString(), "--v4j", PeerRuns.cli(), "--reps", Integer.toString(REPS),
                "--packets", Long.toString(FRAMES)));
        assertEquals(0, r.exit(), "bench-publish failed:\n" + r.output());
        List<String> runs = r.output().lines().filter(l -> l.startsWith("RUN ")).toList();
        assertEquals(ROWS.size() * FORWARD.size() * REPS, runs.size(), r.output());
        Map<String, List<String>> orderByRowAndRep = new TreeMap<>();
        for (String run : runs) {
            assertTrue(run.contains(" exact=yes "), run);
            long tx = field(run, "tx");
            assertEquals(FRAMES, tx, run);
            assertEquals(tx, field(run, "backend_rx"), run);
            String publish = word(run, "publish");
            long publications = field(run, "publications");
            long kicks = field(run, "kicks");
            if (publish.equals("eager")) {
                assertEquals(tx, publications, "eager publishes every frame: " + run);
            } else {
                // once per kickTx of at most 64 frames at least, never more than once per frame
                assertTrue(publications >= (tx + 63) / 64 && publications <= tx, run);
            }
            // a kick follows a publication of frames added since the last one
            assertTrue(kicks <= publications, run);
            orderByRowAndRep.computeIfAbsent(word(run, "row") + " " + word(run, "rep"), k -> new ArrayList<>()).add(publish);
        }
        List<String> backward = FORWARD.reversed();
        for (String row : ROWS) {
            for (int rep = 1; rep <= REPS; rep++) {
                assertEquals(rep % 2 == 1 ? FORWARD : backward, orderByRowAndRep.get(row + " " + rep), row + " rep " + rep);
            }
        }
        List<String> summaries = r.output().lines().filter(l -> l.startsWith("SUMMARY lesson=lazy-avail-publish ")).toList();
        assertEquals(ROWS.size() * 2 * 3, summaries.size(), r.output());
        for (String row : ROWS) {
            for (String b : List.of("lazy", "adaptive")) {
                for (String figure : List.of("pps", "kicks_per_buf", "publications_per_buf")) {
                    String prefix = "SUMMARY lesson=lazy-avail-publish row=" + row + " b=" + b + " figure=" + figure
                            + " pairs=" + REPS + " A_median=";
                    String s = summaries.stream().filter(l -> l.startsWith(prefix)).findFirst()
                            .orElseThrow(() -> new AssertionError("no " + prefix + " in\n" + r.output()));
                    for (String key : List.of("ratio_B_over_A", "ci95_low", "ci95_high", "half_width_pct")) {
                        assertTrue(s.contains(" " + key + "="), s);
                    }
                    boolean judged = figure.equals("pps") ? !row.equals("serve-notify") : figure.equals("kicks_per_buf")
                            && row.equals("serve-notify");
                    assertEquals(judged, s.matches(".* verdict=(reproduced|opposite|refuted|inconclusive|not_measured)$"), s);
                    if (figure.equals("publications_per_buf")) {
                        // eager stores avail.idx once per frame; the others at most that often
                        assertEquals(1.0, Double.parseDouble(word(s, "A_median")), s);
                        assertTrue(Double.parseDouble(word(s, "ratio_B_over_A")) <= 1.0, s);
                    }
                }
            }
        }
    }
}
