package io.virtio4j.cli;

import io.virtio4j.bench.PairedRatio;
import io.virtio4j.bench.Summary;
import io.virtio4j.bench.Verdict;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.MathContext;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code virtio4j paired}: the statistics of {@code bench --compare} ({@link Summary}, {@link PairedRatio}) for one
 * figure measured elsewhere, pair by pair: what {@code peers/ab-builds.sh} prints as its SUMMARY, so that the scripts
 * carry no second copy of the statistics. With {@code --groups} the two-stage form ({@code bench-dpdk-vhost.sh
 * --persistent}'s jvm=means): pairs measured in one JVM pair share that pair's luck, so they are not independent; the
 * interval is taken over one value per group instead, each side's geometric mean over the group's pairs.
 */
@Command(name = "paired", mixinStandardHelpOptions = true, sortOptions = false,
        footer = {"", "Example: virtio4j paired --a 10.1,9.8,10.3 --b 11.0,10.7,11.2"},
        description = {"Paired A/B statistics of one figure measured elsewhere, one A and one B value per pair (e.g. by "
                + "peers/ab-builds.sh): medians and min/max of each side, and B/A as bench --compare computes it "
                + "(geometric mean of the per-pair ratios, 95%% t interval over their logs).",
                "Prints one line: SUMMARY figure=NAME pairs=N A_median= A_min= A_max= B_median= B_min= B_max= "
                        + "ratio_B_over_A= ci95_low= ci95_high= half_width_pct= paired_ratio_median= "
                        + "paired_ratio_min= paired_ratio_max= (n/a where no ratio or interval exists: a value <= 0, "
                        + "or one pair). With --expects, a claim to judge: verdict= at the end, from the experiments' "
                        + "set (reproduced, opposite, refuted, inconclusive; not_measured without an interval).",
                "With --groups, groups=J follows pairs=N and every later field is over the J groups: each side's "
                        + "geometric mean per group (no mean, so n/a, for a group with a value <= 0), then the "
                        + "statistics above over those J pairs of means."})
public final class PairedCommand implements Callable<Integer> {

    @Option(names = "--a", split = ",", required = true, paramLabel = "V", description = "side A's values, in pair order")
    double[] a;
    @Option(names = "--b", split = ",", required = true, paramLabel = "V", description = "side B's values, in pair order")
    double[] b;
    @Option(names = "--groups", split = ",", paramLabel = "LABEL", description = "one label per pair (e.g. the JVM "
            + "pair it ran in): the statistics over the groups' geometric means instead of the pairs")
    String[] groups;
    @Option(names = "--figure", paramLabel = "NAME", description = "the figure's name in the output (default ${DEFAULT-VALUE})")
    String figure = "figure";
    @Option(names = "--expects", paramLabel = "increase|decrease", description = "the claim's direction for B/A: adds "
            + "verdict= as experiments judges a row")
    String expects;
    @Option(names = "--claimed", paramLabel = "RATIO", description = "with --expects: the claimed B/A (an interval that "
            + "holds 1 but not this is refuted); without it, only the direction is judged")
    Double claimed;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        check("--a", a);
        check("--b", b);
        if (a.length != b.length) {
            throw new ParameterException(spec.commandLine(), "--b has " + b.length + " values and --a " + a.length
                    + ": one of each per pair");
        }
        if (figure.isBlank() || figure.chars().anyMatch(Character::isWhitespace)) {
            throw new ParameterException(spec.commandLine(), "--figure must be one word, got '" + figure + "'");
        }
        boolean increase = switch (expects == null ? "" : expects) {
            case "increase", "" -> true;
            case "decrease" -> false;
            default -> throw new ParameterException(spec.commandLine(), "--expects: " + expects
                    + " is not increase or decrease");
        };
        if (claimed != null && (expects == null || !(claimed > 0) || Double.isInfinite(claimed)
                || (claimed > 1) != increase)) {
            throw new ParameterException(spec.commandLine(), "--claimed: " + claimed + (expects == null
                    ? " needs --expects" : " is not a positive ratio on the " + expects + " side of 1"));
        }
        // the values the statistics run over: the pairs, or with --groups one pair of means per group
        double[] va = a;
        double[] vb = b;
        String grouped = "";
        if (groups != null) {
            int[] group = groupIndex();
            va = groupMeans(a, group);
            vb = groupMeans(b, group);
            grouped = " groups=" + va.length;
        }
        Summary sa = Summary.of(va);
        Summary sb = Summary.of(vb);
        PairedRatio r = PairedRatio.of(va, vb);
        double[] sorted = r.ratios().clone();
        java.util.Arrays.sort(sorted);
        // the interval's half-width relative to the ratio (symmetric enough for the few % it is read at)
        double halfWidthPct = r.hasInterval() ? 100 * (r.ciHigh() - r.ciLow()) / 2 / r.geoMean() : Double.NaN;
        PrintWriter out = spec.commandLine().getOut();
        out.println("SUMMARY figure=" + figure + " pairs=" + a.length + grouped
                + side("A", sa, groups == null || allPositive(va)) + side("B", sb, groups == null || allPositive(vb))
                + " ratio_B_over_A=" + ratio(r.geoMean()) + " ci95_low=" + ratio(r.ciLow())
                + " ci95_high=" + ratio(r.ciHigh()) + " half_width_pct=" + pct(halfWidthPct)
                + " paired_ratio_median=" + ratio(r.median()) + " paired_ratio_min=" + ratio(sorted[0])
                + " paired_ratio_max=" + ratio(sorted[sorted.length - 1])
                + (expects == null ? "" : " verdict=" + Verdict.of(r, increase, claimed == null ? Double.NaN : claimed)
                        .text().replace(' ', '_')));
        out.flush();
        return 0;
    }

    /** Each pair's group, numbered 0, 1, ... in the order the labels first appear. */
    private int[] groupIndex() {
        if (groups.length != a.length) {
            throw new ParameterException(spec.commandLine(), "--groups has " + groups.length + " labels and --a "
                    + a.length + " values: one label per pair");
        }
        Map<String, Integer> index = new LinkedHashMap<>();
        int[] group = new int[groups.length];
        for (int i = 0; i < groups.length; i++) {
            if (groups[i].isBlank()) {
                throw new ParameterException(spec.commandLine(), "--groups: label " + (i + 1) + " is empty");
            }
            group[i] = index.computeIfAbsent(groups[i], k -> index.size());
        }
        return group;
    }

    /**
     * Per group, the geometric mean of its values (0 when one of them is <= 0: there is none: the ratio and
     * that side's median, min and max read n/a).
     * Per side, not per ratio: B's mean over A's is the geometric mean of the group's per-pair ratios all the same.
     */
    private static double[] groupMeans(double[] values, int[] group) {
        int n = java.util.Arrays.stream(group).max().orElseThrow() + 1;
        double[] logSum = new double[n];
        int[] count = new int[n];
        boolean[] positive = new boolean[n];
        java.util.Arrays.fill(positive, true);
        for (int i = 0; i < values.length; i++) {
            positive[group[i]] &= values[i] > 0;
            logSum[group[i]] += values[i] > 0 ? Math.log(values[i]) : 0;
            count[group[i]]++;
        }
        double[] means = new double[n];
        for (int g = 0; g < n; g++) {
            means[g] = positive[g] ? Math.exp(logSum[g] / count[g]) : 0;
        }
        return means;
    }

    /**
     * A side's median, min and max; "n/a" for all three when {@code defined} is false: with --groups a group holding
     * a value <= 0 has no geometric mean (its placeholder 0 is no figure), so no statistic over the groups exists.
     */
    private static String side(String name, Summary s, boolean defined) {
        return " " + name + "_median=" + (defined ? num(s.median()) : "n/a")
                + " " + name + "_min=" + (defined ? num(s.min()) : "n/a")
                + " " + name + "_max=" + (defined ? num(s.max()) : "n/a");
    }

    private static boolean allPositive(double[] values) {
        return java.util.Arrays.stream(values).allMatch(v -> v > 0);
    }

    private void check(String option, double[] values) {
        for (double v : values) {
            if (!Double.isFinite(v)) {
                throw new ParameterException(spec.commandLine(), option + ": " + v + " is not a finite number");
            }
        }
    }

    /**
     * A figure with up to 10 significant digits (a frame count or packets per second comes back as given), never in
     * exponent notation (scripts compare them as plain numbers).
     */
    private static String num(double v) {
        return new BigDecimal(v).round(new MathContext(10)).stripTrailingZeros().toPlainString();
    }

    private static String ratio(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.4f", v) : "n/a";
    }

    private static String pct(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.2f", v) : "n/a";
    }
}
