package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code bench --compare KEY=A,B --json FILE}: the comparison is written whole, outlier pairs included. */
class BenchCompareCommandTest {

    @Test
    void aComparisonWritesItsRatiosAndOutlierPairsAsJson(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("compare.json");
        String[] r = execute("bench", "--compare", "in-order=off,on", "--bufs", "20000", "--runs", "3", "--warmup", "0",
                "--json", json.toString());
        assertEquals("0", r[0], r[1]);
        String j = Files.readString(json);
        assertTrue(j.contains("\"compare\": \"in-order\""), j);
        assertTrue(j.contains("\"ratio_b_over_a\""), j);
        assertTrue(Pattern.compile("\"outlier_pairs\": \\[[0-9, ]*\\]").matcher(j).find(), j);
    }
}
