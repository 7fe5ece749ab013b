package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code virtio4j paired} prints the paired statistics of values measured elsewhere as one SUMMARY line of key=value
 * fields, figured here by hand, and refuses input it cannot pair by the option that holds it.
 */
class PairedCommandTest {

    /** The SUMMARY line's fields. */
    private static Map<String, String> summary(String... args) {
        StringWriter out = new StringWriter();
        CommandLine cl = new CommandLine(new Main());
        cl.setOut(new PrintWriter(out, true));
        assertEquals(0, cl.execute(args), out.toString());
        String line = out.toString().strip();
        assertTrue(line.startsWith("SUMMARY ") && line.lines().count() == 1, line);
        Map<String, String> m = new LinkedHashMap<>();
        for (String kv : line.substring("SUMMARY ".length()).split(" ")) {
            int eq = kv.indexOf('=');
            m.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return m;
    }

    @Test
    void pairsThatAllMoveByTheSameFactorGiveThatRatioWithAnIntervalOfNoWidth() {
        Map<String, String> s = summary("paired", "--figure", "pps", "--a", "100,400,200", "--b", "110,440,220");
        assertEquals("pps", s.get("figure"));
        assertEquals("3", s.get("pairs"));
        assertEquals("200", s.get("A_median"));
        assertEquals("100", s.get("A_min"));
        assertEquals("400", s.get("A_max"));
        assertEquals("220", s.get("B_median"));
        assertEquals("110", s.get("B_min"));
        assertEquals("440", s.get("B_max"));
        assertEquals("1.1000", s.get("ratio_B_over_A"));
        assertEquals("1.1000", s.get("ci95_low"));
        assertEquals("1.1000", s.get("ci95_high"));
        assertEquals("0.00", s.get("half_width_pct"));
        assertEquals("1.1000", s.get("paired_ratio_min"));
        assertEquals("1.1000", s.get("paired_ratio_max"));
    }

    /**
     * Two pairs with ratios 1 and 1.21: geometric mean 1.1; the logs' standard deviation is ln(1.21) / sqrt(2),
     * Student's t for 1 degree of freedom is 12.706, so the interval is 1.1 * exp(-+12.706 * ln(1.21) / 2).
     */
    @Test
    void twoPairsGiveTheGeometricMeanAndTheStudentTIntervalOfTheirLogRatios() {
        Map<String, String> s = summary("paired", "--a", "1000000,2000000", "--b", "1000000,2420000");
        double half = 12.706 * Math.log(1.21) / 2;
        assertEquals("1.1000", s.get("ratio_B_over_A"));
        assertEquals(String.format(Locale.ROOT, "%.4f", 1.1 * Math.exp(-half)), s.get("ci95_low"));
        assertEquals(String.format(Locale.ROOT, "%.4f", 1.1 * Math.exp(half)), s.get("ci95_high"));
        assertEquals(String.format(Locale.ROOT, "%.2f", 100 * Math.sinh(half)), s.get("half_width_pct"));
        assertEquals("1.1050", s.get("paired_ratio_median"));
        assertEquals("1.0000", s.get("paired_ratio_min"));
        assertEquals("1.2100", s.get("paired_ratio_max"));
        assertEquals("1500000", s.get("A_median"), "plain digits, never an exponent");
        assertEquals("2420000", s.get("B_max"));
        assertEquals("figure", s.get("figure"));
    }

    /**
     * The verdict is experiments' ({@code Verdict}): pairs all 1.1 apart give an interval of no width at 1.1, on the
     * claimed side of 1 for an increase, the other side for a decrease; the two pairs 1 and 1.21 apart give an
     * interval holding 1, which excludes a claimed 3 (refuted) and holds a claimed 1.2 (inconclusive).
     */
    @Test
    void aClaimIsJudgedWithTheExperimentsVerdicts() {
        assertEquals("reproduced", summary("paired", "--a", "100,400", "--b", "110,440", "--expects", "increase",
                "--claimed", "1.67").get("verdict"));
        assertEquals("opposite", summary("paired", "--a", "100,400", "--b", "110,440", "--expects", "decrease")
                .get("verdict"));
        assertEquals("refuted", summary("paired", "--a", "1000000,2000000", "--b", "1000000,2420000", "--expects",
                "increase", "--claimed", "1000").get("verdict"));
        assertEquals("inconclusive", summary("paired", "--a", "1000000,2000000", "--b", "1000000,2420000", "--expects",
                "increase", "--claimed", "1.2").get("verdict"));
        assertEquals("not_measured", summary("paired", "--a", "0,5", "--b", "3,5", "--expects", "increase")
                .get("verdict"));
        assertEquals(null, summary("paired", "--a", "1,2", "--b", "1,2").get("verdict"), "no claim, no verdict");
    }

    @Test
    void aClaimWithoutADirectionOrOnTheWrongSideIsRefusedByItsFlag() {
        String[] r = execute("paired", "--a", "1,2", "--b", "1,2", "--claimed", "1.5");
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].startsWith("--claimed: 1.5 needs --expects"), r[1]);
        r = execute("paired", "--a", "1,2", "--b", "1,2", "--expects", "decrease", "--claimed", "1.5");
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].startsWith("--claimed: 1.5 is not a positive ratio on the decrease side of 1"), r[1]);
        r = execute("paired", "--a", "1,2", "--b", "1,2", "--expects", "up");
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].startsWith("--expects: up is not increase or decrease"), r[1]);
    }

    /**
     * With --groups the statistics run over one pair of means per group, each side's geometric mean over the group's
     * pairs, figured here by hand: group x holds A 100, 400 (geometric mean 200, not the arithmetic 250) and B 110,
     * 440 (220); group y A 1000, 1000 and B 1210, 1210. The labels need not be contiguous. The line is the one paired
     * prints for those two pairs of means, besides pairs= (the pairs given) and groups=.
     */
    @Test
    void groupsTakeTheStatisticsOverEachGroupsGeometricMeans() {
        Map<String, String> g = summary("paired", "--figure", "pps", "--a", "100,1000,400,1000",
                "--b", "110,1210,440,1210", "--groups", "x,y,x,y");
        Map<String, String> byHand = summary("paired", "--figure", "pps", "--a", "200,1000", "--b", "220,1210");
        assertEquals("4", g.get("pairs"));
        assertEquals("2", g.get("groups"));
        assertEquals("200", g.get("A_min"));
        assertEquals("1210", g.get("B_max"));
        // ratios 1.1 and 1.21: geometric mean sqrt(1.331); an interval exists with two groups
        assertEquals(String.format(Locale.ROOT, "%.4f", Math.sqrt(1.1 * 1.21)), g.get("ratio_B_over_A"));
        g.remove("groups");
        g.put("pairs", "2");
        assertEquals(byHand, g);
        // the same pairs ungrouped: four ratios (1.1, 1.21, 1.1, 1.21), three degrees of freedom, a narrower interval
        Map<String, String> pooled = summary("paired", "--figure", "pps", "--a", "100,1000,400,1000",
                "--b", "110,1210,440,1210");
        assertEquals(g.get("ratio_B_over_A"), pooled.get("ratio_B_over_A"));
        assertTrue(Double.parseDouble(pooled.get("half_width_pct")) < Double.parseDouble(g.get("half_width_pct")),
                pooled + " vs " + g);
    }

    @Test
    void oneGroupGivesItsRatioWithoutAnIntervalAndAGroupWithAZeroNoRatio() {
        Map<String, String> one = summary("paired", "--a", "100,400", "--b", "110,440", "--groups", "1,1");
        assertEquals("1", one.get("groups"));
        assertEquals("1.1000", one.get("ratio_B_over_A"));
        assertEquals("n/a", one.get("ci95_low"));
        assertEquals("n/a", one.get("half_width_pct"));
        Map<String, String> zero = summary("paired", "--a", "0,400,100,100", "--b", "110,440,110,110", "--groups",
                "1,1,2,2");
        assertEquals("n/a", zero.get("ratio_B_over_A"));
        // group 1 has no geometric mean on side A: no statistic over A's groups, rather than a 0 read as a figure
        assertEquals("n/a", zero.get("A_min"));
        assertEquals("n/a", zero.get("A_median"));
        assertEquals("n/a", zero.get("A_max"));
        assertEquals("110", zero.get("B_min"), "side B's groups all have a mean");
    }

    @Test
    void groupsThatDoNotLabelEveryPairAreRefused() {
        String[] r = execute("paired", "--a", "1,2,3", "--b", "1,2,3", "--groups", "1,2");
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].startsWith("--groups has 2 labels and --a 3 values: one label per pair"), r[1]);
        r = execute("paired", "--a", "1,2,3", "--b", "1,2,3", "--groups", "1,,2");
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].startsWith("--groups: label 2 is empty"), r[1]);
    }

    @Test
    void figuresComeBackWithAllTheirDigits() {
        Map<String, String> s = summary("paired", "--a", "1088352,0.1", "--b", "14.25,656797");
        assertEquals("0.1", s.get("A_min"));
        assertEquals("1088352", s.get("A_max"));
        assertEquals("14.25", s.get("B_min"));
        assertEquals("656797", s.get("B_max"));
    }

    @Test
    void oneZeroValueLeavesNoRatioButStillTheMedians() {
        Map<String, String> s = summary("paired", "--a", "0,5", "--b", "3,5");
        assertEquals("n/a", s.get("ratio_B_over_A"));
        assertEquals("n/a", s.get("ci95_low"));
        assertEquals("n/a", s.get("half_width_pct"));
        assertEquals("2.5", s.get("A_median"));
        assertEquals("4", s.get("B_median"));
    }

    @Test
    void inputThatCannotBePairedIsRefusedByItsOption() {
        String[] r = execute("paired", "--a", "1,2", "--b", "1");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--b has 1 values and --a 2: one of each per pair"), r[1]);
        r = execute("paired", "--a", "1,NaN", "--b", "1,2");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--a: NaN is not a finite number"), r[1]);
        r = execute("paired", "--a", "1,x", "--b", "1,2");
        assertEquals("2", r[0]);
        assertTrue(r[1].contains("--a"), r[1]);
        r = execute("paired", "--a", "1", "--b", "1", "--figure", "two words");
        assertEquals("2", r[0]);
        assertTrue(r[1].startsWith("--figure must be one word"), r[1]);
        r = execute("paired", "--a", "1");
        assertEquals("2", r[0]);
        assertTrue(r[1].contains("--b"), r[1]);
    }
}
