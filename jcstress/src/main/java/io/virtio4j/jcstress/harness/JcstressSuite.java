package io.virtio4j.jcstress.harness;

import io.virtio4j.jcstress.NegativeControl;
import org.openjdk.jcstress.JCStress;
import org.openjdk.jcstress.Options;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.infra.Status;
import org.openjdk.jcstress.infra.collectors.DiskReadCollector;
import org.openjdk.jcstress.infra.collectors.InProcessCollector;
import org.openjdk.jcstress.infra.collectors.TestResult;
import org.openjdk.jcstress.infra.grading.GradingResult;
import org.openjdk.jcstress.infra.grading.ReportUtils;
import org.openjdk.jcstress.infra.grading.TestGrading;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Runs one jcstress suite in this JVM, checks the results against what the suite requires and turns that into an
 * exit code. jcstress alone fails a run only on forbidden outcomes and errors (an {@code AssertionError} from its
 * report printer); it has no way to require that an outcome <em>was</em> seen, which the negative control needs.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp ... io.virtio4j.jcstress.harness.JcstressSuite \
 *      --suite ring|negative-control [--fence-omitting-classes DIR]
 *      [--mode ci|sanity|quick|default|tough|stress] [--only REGEX] [--args "extra jcstress options"]
 * </pre>
 *
 * <ul>
 *   <li>{@code ring}: every test except the {@code *NegativeControl} ones, fences in place. Fails when a test
 *       sees a forbidden outcome, errors, or produced no result.</li>
 *   <li>{@code negative-control}: only the {@code *NegativeControl} tests, every forked JVM started with
 *       {@code -Xbootclasspath/a:DIR}, where DIR ({@code --fence-omitting-classes}, this module's
 *       {@code target/negative-control-classes}) holds the fence-omitting {@code io.virtio4j.core.ordering.Fences}:
 *       the boot loader is asked first, so core's ring classes run without the store-&gt;load fence there. Fails
 *       unless each test observed its ACCEPTABLE_INTERESTING outcome (the lost notification), i.e. unless the
 *       litmus tests can fail.</li>
 * </ul>
 * jcstress writes its binary result file and its HTML/text reports ({@code results/}) into the working
 * directory; this class reads the binary file back through jcstress's own collector and grading, prints a
 * table of every outcome per test and writes it to {@code summary.txt}.
 */
public final class JcstressSuite {
    private JcstressSuite() {
    }

    private static final String PACKAGE = "io\\.virtio4j\\.jcstress\\.";
    private static final String NEGATIVE_MARK = "NegativeControl";

    enum Suite {
        RING("ring", "(?!.*" + NEGATIVE_MARK + ")" + PACKAGE),
        NEGATIVE_CONTROL("negative-control", PACKAGE + ".*" + NEGATIVE_MARK);

        final String id;
        final String filter;

        Suite(String id, String filter) {
            this.id = id;
            this.filter = "^" + filter;
        }

        /** The suite's test selector, narrowed to names that also contain a match of {@code only}, if given. */
        String filter(String only) {
            return only.isEmpty() ? filter : "^(?=.*(?:" + only + "))" + filter.substring(1);
        }

        static Suite of(String id) {
            for (Suite s : values()) {
                if (s.id.equals(id)) {
                    return s;
                }
            }
            throw new IllegalArgumentException("unknown suite '" + id + "': ring or negative-control");
        }
    }

    /**
     * The short preset {@code mvn verify} uses for the ring suite: jcstress "quick" (one fork per JVM
     * configuration, 200 ms iterations) cut to 3 iterations and 10 strides per epoch (the fork sizes its stride
     * by trial up to that many states, which is most of a short fork's time), without split per-actor compilation
     * modes (they would multiply the forks by 9 to 14). Every test still runs in four JVM configurations:
     * interpreter, C1, C2, and C2 with the code-motion randomisers.
     */
    static final List<String> CI_PRESET_RING = List.of("-m", "quick", "-iters", "3", "-sc", "false", "-strideCount", "10");

    /**
     * The short preset for the negative control: one JVM configuration (tiered compilation, as in production;
     * giving {@code -jvmArgs} turns off jcstress's configuration matrix) with 20 iterations, where the interpreter
     * and C1-only forks would spend most of the time for few overlapping samples. Measured here: 10 iterations gave
     * 8 to 10,000 lost notifications per test depending on the machine's mood; 20 doubles the margin against a
     * run that sees none.
     */
    static final List<String> CI_PRESET_NEGATIVE = List.of("-m", "quick", "-iters", "20", "-sc", "false",
            "-strideCount", "10", "-jvmArgs", "--enable-native-access=ALL-UNNAMED");

    public static void main(String[] args) throws Exception {
        Suite suite = null;
        String mode = "ci";
        String extra = "";
        String only = "";
        String fenceOmitting = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--fence-omitting-classes" -> fenceOmitting = value(args, ++i);
                case "--suite" -> suite = Suite.of(value(args, ++i));
                case "--mode" -> mode = value(args, ++i).trim();
                case "--args" -> extra = value(args, ++i).trim();
                case "--only" -> only = value(args, ++i).trim();
                default -> usage("unknown argument '" + args[i] + "'");
            }
        }
        if (suite == null) {
            usage("--suite is required");
        }
        if (NegativeControl.fenceOmitted()) {
            // jcstress copies this JVM's arguments into every fork: the fence-omitting class must come only from
            // the negative-control suite, never into the ring suite's forks.
            usage("do not start the harness with the fence-omitting Fences on its class path; the negative-control"
                    + " suite puts it into its forks");
        }
        Path fenceOmittingClasses;
        try {
            fenceOmittingClasses = fenceOmittingClasses(suite, fenceOmitting);
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
            return;
        }
        System.exit(run(suite, mode, only, extra, fenceOmittingClasses));
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            usage("missing value after " + args[i - 1]);
        }
        return args[i];
    }

    private static void usage(String message) {
        System.err.println("JcstressSuite: " + message);
        System.err.println("usage: JcstressSuite --suite ring|negative-control [--fence-omitting-classes DIR] [--mode ci|sanity|quick|default|tough|stress] [--only REGEX] [--args \"jcstress options\"]");
        System.exit(2);
    }

    /**
     * The directory with the fence-omitting {@code Fences} class: required by the negative-control suite (it must
     * hold {@code io/virtio4j/core/ordering/Fences.class}), refused by the ring suite. Null for the ring suite.
     */
    static Path fenceOmittingClasses(Suite suite, String dir) {
        if (suite == Suite.RING) {
            if (dir != null) {
                throw new IllegalArgumentException("--fence-omitting-classes belongs to the negative-control suite only");
            }
            return null;
        }
        if (dir == null) {
            throw new IllegalArgumentException("the negative-control suite needs --fence-omitting-classes DIR"
                    + " (this module's target/negative-control-classes)");
        }
        Path p = Path.of(dir).toAbsolutePath();
        if (!Files.isRegularFile(p.resolve(FENCES_CLASS))) {
            throw new IllegalArgumentException("--fence-omitting-classes " + p + " holds no " + FENCES_CLASS
                    + " (is the module built?)");
        }
        return p;
    }

    private static final String FENCES_CLASS = "io/virtio4j/core/ordering/Fences.class";

    /** jcstress options that take no value. */
    private static final Set<String> FLAGS = Set.of("-v", "-vv", "-vvv", "-h");
    /** jcstress options whose occurrences add up (each occurrence is one JVM argument). */
    private static final Set<String> REPEATED = Set.of("-jvmArgs", "-jvmArgsPrepend");

    /**
     * The jcstress command line: the mode's preset, the suite's selector, results in {@code results/}, at most two
     * CPUs, and the JVM arguments every fork needs. {@code extra} options override the preset's (e.g.
     * {@code -iters 10}) or, for {@code -jvmArgs} / {@code -jvmArgsPrepend}, add to them; the selector and the
     * results directory are the suite's own ({@code --only} narrows the selector).
     */
    static List<String> jcstressArgs(Suite suite, String mode, String only, String extra, Path fenceOmittingClasses) {
        Map<String, List<String>> o = new LinkedHashMap<>();
        List<String> preset = !mode.isEmpty() && !mode.equals("ci") ? List.of("-m", mode)
                : suite == Suite.RING ? CI_PRESET_RING : CI_PRESET_NEGATIVE;
        for (int i = 0; i < preset.size(); i += 2) {
            o.put(preset.get(i), new ArrayList<>(List.of(preset.get(i + 1))));
        }
        o.put("-t", new ArrayList<>(List.of(suite.filter(only))));
        o.put("-r", new ArrayList<>(List.of("results")));
        o.put("-c", new ArrayList<>(List.of(Integer.toString(Math.min(2, Runtime.getRuntime().availableProcessors())))));
        // Every fork runs FFM code; the negative control's forks also load the fence-omitting Fences, from the boot
        // class path, which the class loaders consult before the application class path with core's Fences.
        List<String> prepend = new ArrayList<>(List.of("--enable-native-access=ALL-UNNAMED"));
        if (suite == Suite.NEGATIVE_CONTROL) {
            prepend.add("-Xbootclasspath/a:" + fenceOmittingClasses);
        }
        o.put("-jvmArgsPrepend", prepend);

        String[] x = extra.isEmpty() ? new String[0] : extra.split("\\s+");
        for (int i = 0; i < x.length; i++) {
            String key = x[i];
            if (!key.startsWith("-")) {
                throw new IllegalArgumentException("jcstress option expected in --args, got '" + key + "'");
            }
            if (key.equals("-t") || key.equals("-r")) {
                throw new IllegalArgumentException(key + " belongs to the suite; narrow the selection with --only");
            }
            if (FLAGS.contains(key)) {
                o.put(key, new ArrayList<>());
                continue;
            }
            if (i + 1 >= x.length) {
                throw new IllegalArgumentException("jcstress option " + key + " needs a value");
            }
            String v = x[++i];
            if (REPEATED.contains(key)) {
                o.computeIfAbsent(key, k -> new ArrayList<>()).add(v);
            } else {
                o.put(key, new ArrayList<>(List.of(v)));
            }
        }

        List<String> a = new ArrayList<>();
        o.forEach((key, values) -> {
            if (values.isEmpty()) {
                a.add(key);
            }
            for (String v : values) {
                a.add(key);
                a.add(v);
            }
        });
        return a;
    }

    static int run(Suite suite, String mode, String only, String extra, Path fenceOmittingClasses) throws Exception {
        List<String> jcArgs = jcstressArgs(suite, mode, only, extra, fenceOmittingClasses);
        System.out.println("virtio4j jcstress suite '" + suite.id + "', mode '" + mode + "': jcstress " + String.join(" ", jcArgs));
        Options opts = new Options(jcArgs.toArray(new String[0]));
        if (!opts.parse()) {
            return 2;
        }
        JCStress jcstress = new JCStress(opts);
        SortedSet<String> tests = jcstress.getTests();
        List<String> problems = new ArrayList<>();
        if (tests.isEmpty() && !only.isEmpty()) {
            System.out.println("SKIPPED: no test of suite '" + suite.id + "' matches --only " + only);
            return 0;
        }
        if (tests.isEmpty()) {
            problems.add("no test matches " + suite.filter(only) + " (was the jcstress annotation processor run?)");
        }
        for (String t : tests) {
            if (t.contains(NEGATIVE_MARK) != (suite == Suite.NEGATIVE_CONTROL)) {
                problems.add("test " + t + " does not belong to suite " + suite.id);
            }
        }
        if (!problems.isEmpty()) {
            return report(suite, mode, 0, List.of(), problems);
        }

        long start = System.nanoTime();
        String jcstressFailure = null;
        try {
            jcstress.run();
        } catch (AssertionError e) {
            // jcstress's way of saying "forbidden outcome or error"; the checks below name each one
            jcstressFailure = e.getMessage();
        }
        long elapsedSeconds = (System.nanoTime() - start) / 1_000_000_000L;

        Path resultFile = Path.of(opts.getResultFile());
        if (!Files.exists(resultFile)) {
            problems.add("jcstress wrote no result file " + resultFile.toAbsolutePath() + " (see its output above)");
            return report(suite, mode, elapsedSeconds, List.of(), problems);
        }
        InProcessCollector collector = new InProcessCollector();
        DiskReadCollector reader = new DiskReadCollector(resultFile.toString(), collector);
        try {
            reader.dump();
        } finally {
            reader.close();
        }
        List<TestResult> results = new ArrayList<>(ReportUtils.mergedByName(collector.getTestResults()));
        results.sort(Comparator.comparing(TestResult::getName));

        TreeSet<String> missing = new TreeSet<>(tests);
        for (TestResult r : results) {
            missing.remove(r.getName());
            problems.addAll(check(suite, r));
        }
        for (String t : missing) {
            problems.add(t + ": no result (the test did not run)");
        }
        if (jcstressFailure != null && problems.isEmpty()) {
            problems.add("jcstress reported: " + jcstressFailure.strip());
        }
        return report(suite, mode, elapsedSeconds, results, problems);
    }

    /** What is wrong with one test's merged result, for this suite. */
    static List<String> check(Suite suite, TestResult r) {
        List<String> p = new ArrayList<>();
        if (r.status() != Status.NORMAL) {
            p.add(r.getName() + ": " + r.status() + " " + String.join(" | ", r.getMessages()));
            return p;
        }
        if (r.getTotalCount() == 0) {
            p.add(r.getName() + ": no samples");
        }
        TestGrading g = r.grading();
        if (!g.isPassed) {
            for (String m : g.failureMessages) {
                p.add(r.getName() + ": " + m);
            }
        }
        if (suite == Suite.NEGATIVE_CONTROL && !g.hasInteresting) {
            p.add(r.getName() + ": the negative control did NOT show its interesting (forbidden-with-fences) outcome,"
                    + " so this run cannot show that the litmus tests are able to fail");
        }
        if (suite == Suite.RING && g.hasInteresting) {
            p.add(r.getName() + ": interesting outcome in the ring suite (only negative controls declare one)");
        }
        return p;
    }

    private static int report(Suite suite, String mode, long seconds, List<TestResult> results, List<String> problems)
            throws IOException {
        StringWriter sw = new StringWriter();
        PrintWriter out = new PrintWriter(sw);
        out.println();
        out.println("==== virtio4j jcstress summary: suite '" + suite.id + "', mode '" + mode + "', " + results.size()
                + " tests, " + seconds + " s ====");
        for (TestResult r : results) {
            out.printf(Locale.ROOT, "%n[%s] %s   (%,d samples)%n", verdict(suite, r), r.getName(), r.getTotalCount());
            TreeMap<String, GradingResult> rows = r.status() == Status.NORMAL ? r.grading().gradingResults : new TreeMap<>();
            for (GradingResult row : rows.values()) {
                out.printf(Locale.ROOT, "    %-22s %,15d  %-22s %s%n", row.id, row.count, row.expect,
                        row.description == null ? "" : row.description);
            }
        }
        out.println();
        if (problems.isEmpty()) {
            out.println(suite == Suite.NEGATIVE_CONTROL
                    ? "PASSED: every negative control observed the lost-notification outcome (the litmus tests can fail)."
                    : "PASSED: no forbidden outcome, no error.");
        } else {
            out.println("FAILED (" + problems.size() + "):");
            for (String p : problems) {
                out.println("  - " + p);
            }
        }
        out.flush();
        System.out.print(sw);
        Files.writeString(Path.of("summary.txt"), sw.toString());
        return problems.isEmpty() ? 0 : 1;
    }

    private static String verdict(Suite suite, TestResult r) {
        if (r.status() != Status.NORMAL) {
            return "ERROR";
        }
        List<String> p = check(suite, r);
        if (!p.isEmpty()) {
            return "FAIL";
        }
        boolean interesting = r.grading().gradingResults.values().stream()
                .anyMatch(g -> g.expect == Expect.ACCEPTABLE_INTERESTING && g.count > 0);
        return interesting ? "OK, INTERESTING SEEN" : "OK";
    }
}
