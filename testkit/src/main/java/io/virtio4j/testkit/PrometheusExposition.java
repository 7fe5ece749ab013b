package io.virtio4j.testkit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A strict reader of Prometheus' text exposition format 0.0.4, for tests of what an endpoint serves: every line is
 * checked ({@code # HELP} and {@code # TYPE} once per family and before its samples, a family's samples together,
 * metric and label names, label value escapes, no series twice, values numbers) and the first violation is thrown as
 * {@link IllegalArgumentException} naming the line. Our own rules on top: a counter's name ends in {@code _total} and
 * its values are whole and non-negative.
 */
public final class PrometheusExposition {
    private static final Pattern METRIC_NAME = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
    private static final Pattern LABEL_NAME = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");
    private static final Set<String> TYPES = Set.of("counter", "gauge", "histogram", "summary", "untyped");

    /** One sample: its labels in the order written, and its value as written. */
    public record Sample(Map<String, String> labels, String value) {
    }

    /** One family: name, type, help (unescaped) and samples. */
    public record Family(String name, String type, String help, List<Sample> samples) {
    }

    private final Map<String, Family> families;

    private PrometheusExposition(Map<String, Family> families) {
        this.families = families;
    }

    public Map<String, Family> families() {
        return families;
    }

    /** Parses {@code text}, checking every rule; throws naming the first line that breaks one. */
    public static PrometheusExposition parse(String text) {
        if (!text.isEmpty() && !text.endsWith("\n")) {
            throw new IllegalArgumentException("the exposition does not end with a line feed");
        }
        Map<String, Family> families = new LinkedHashMap<>();
        Map<String, String> helps = new LinkedHashMap<>();
        Map<String, String> types = new LinkedHashMap<>();
        Set<String> closed = new HashSet<>();
        Set<String> series = new HashSet<>();
        String current = null;
        String[] lines = text.split("\n", -1);
        for (int n = 0; n < lines.length - 1; n++) {
            String line = lines[n];
            String where = "line " + (n + 1) + " \"" + line + "\": ";
            if (line.isEmpty()) {
                throw new IllegalArgumentException(where + "empty line");
            }
            if (line.startsWith("#")) {
                String[] p = line.split(" ", 4);
                if (p.length < 3 || !p[0].equals("#") || !(p[1].equals("HELP") || p[1].equals("TYPE"))) {
                    throw new IllegalArgumentException(where + "a comment that is not # HELP or # TYPE");
                }
                String name = p[2];
                if (!METRIC_NAME.matcher(name).matches()) {
                    throw new IllegalArgumentException(where + "metric name " + name);
                }
                if (closed.contains(name) || families.containsKey(name)) {
                    throw new IllegalArgumentException(where + "# " + p[1] + " after " + name + "'s samples began");
                }
                if (current != null && !current.equals(name)) {
                    closed.add(current);
                }
                current = name;
                if (p[1].equals("HELP")) {
                    if (helps.put(name, unescape(p.length == 4 ? p[3] : "", false, where)) != null) {
                        throw new IllegalArgumentException(where + "a second # HELP for " + name);
                    }
                } else {
                    if (p.length != 4 || !TYPES.contains(p[3])) {
                        throw new IllegalArgumentException(where + "type is not one of " + TYPES);
                    }
                    if (types.put(name, p[3]) != null) {
                        throw new IllegalArgumentException(where + "a second # TYPE for " + name);
                    }
                }
                continue;
            }
            int i = 0;
            while (i < line.length() && line.charAt(i) != '{' && line.charAt(i) != ' ') {
                i++;
            }
            String name = line.substring(0, i);
            if (!METRIC_NAME.matcher(name).matches()) {
                throw new IllegalArgumentException(where + "metric name " + name);
            }
            if (!types.containsKey(name) || !helps.containsKey(name)) {
                throw new IllegalArgumentException(where + "a sample of " + name + " without its # HELP and # TYPE");
            }
            if (closed.contains(name) || (current != null && !current.equals(name))) {
                throw new IllegalArgumentException(where + "a sample of " + name + " apart from its family's lines");
            }
            current = name;
            Map<String, String> labels = new LinkedHashMap<>();
            if (i < line.length() && line.charAt(i) == '{') {
                i = labels(line, i + 1, labels, where);
            }
            if (i >= line.length() || line.charAt(i) != ' ') {
                throw new IllegalArgumentException(where + "no space before the value");
            }
            String[] rest = line.substring(i + 1).split(" ", -1);
            if (rest.length > 2 || rest[0].isEmpty()) {
                throw new IllegalArgumentException(where + "value [timestamp] expected");
            }
            String value = rest[0];
            if (!(value.equals("NaN") || value.equals("+Inf") || value.equals("-Inf"))) {
                try {
                    Double.parseDouble(value);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(where + "value " + value + " is not a number");
                }
            }
            String type = types.get(name);
            if (type.equals("counter")) {
                if (!name.endsWith("_total")) {
                    throw new IllegalArgumentException(where + "counter " + name + " does not end in _total");
                }
                if (!value.matches("[0-9]+")) {
                    throw new IllegalArgumentException(where + "counter value " + value + " is not a whole number >= 0");
                }
            }
            // a series is its name and its label set: the same labels in another order are the same series
            if (!series.add(name + new TreeMap<>(labels))) {
                throw new IllegalArgumentException(where + "series given twice");
            }
            families.computeIfAbsent(name, k -> new Family(k, type, helps.get(k), new ArrayList<>()))
                    .samples().add(new Sample(labels, value));
        }
        for (String name : types.keySet()) {
            families.computeIfAbsent(name, k -> new Family(k, types.get(k), helps.get(k), new ArrayList<>()));
        }
        return new PrometheusExposition(families);
    }

    /** Reads {@code name="value",...}} from {@code from}; returns the index after the closing brace. */
    private static int labels(String line, int from, Map<String, String> labels, String where) {
        int i = from;
        while (true) {
            if (i < line.length() && line.charAt(i) == '}') {
                return i + 1;
            }
            int eq = line.indexOf('=', i);
            if (eq < 0) {
                throw new IllegalArgumentException(where + "label without =");
            }
            String label = line.substring(i, eq);
            if (!LABEL_NAME.matcher(label).matches() || label.startsWith("__")) {
                throw new IllegalArgumentException(where + "label name " + label);
            }
            if (eq + 1 >= line.length() || line.charAt(eq + 1) != '"') {
                throw new IllegalArgumentException(where + "label " + label + "'s value is not quoted");
            }
            StringBuilder raw = new StringBuilder();
            int j = eq + 2;
            while (true) {
                if (j >= line.length()) {
                    throw new IllegalArgumentException(where + "label " + label + "'s value is not closed");
                }
                char c = line.charAt(j);
                if (c == '\\') {
                    if (j + 1 >= line.length()) {
                        throw new IllegalArgumentException(where + "a backslash ends the line");
                    }
                    raw.append(c).append(line.charAt(j + 1));
                    j += 2;
                } else if (c == '"') {
                    break;
                } else {
                    raw.append(c);
                    j++;
                }
            }
            if (labels.put(label, unescape(raw.toString(), true, where)) != null) {
                throw new IllegalArgumentException(where + "label " + label + " given twice");
            }
            i = j + 1;
            if (i < line.length() && line.charAt(i) == ',') {
                i++;
            } else if (i >= line.length() || line.charAt(i) != '}') {
                throw new IllegalArgumentException(where + "labels not separated by , or closed by }");
            }
        }
    }

    /** Undoes the format's escapes: \\ and \n, and in label values \". Any other escape is refused. */
    private static String unescape(String s, boolean labelValue, String where) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = i + 1 < s.length() ? s.charAt(++i) : '\0';
            switch (e) {
                case '\\' -> b.append('\\');
                case 'n' -> b.append('\n');
                case '"' -> {
                    if (!labelValue) {
                        throw new IllegalArgumentException(where + "\\\" in a help text");
                    }
                    b.append('"');
                }
                default -> throw new IllegalArgumentException(where + "escape \\" + e);
            }
        }
        return b.toString();
    }

    /**
     * The value of the one sample of {@code name} whose labels include {@code labels} (name, value pairs), as a whole
     * number; fails when there is none or more than one.
     */
    public long value(String name, String... labels) {
        List<Sample> found = matching(name, labels);
        if (found.size() != 1) {
            throw new AssertionError((found.isEmpty() ? "no" : found.size()) + " samples of " + name + " with "
                    + List.of(labels) + " in " + families.get(name).samples());
        }
        return Long.parseLong(found.get(0).value());
    }

    /** The sum of every sample of {@code name} whose labels include {@code labels}. */
    public long sum(String name, String... labels) {
        long sum = 0;
        for (Sample s : matching(name, labels)) {
            sum += Long.parseLong(s.value());
        }
        return sum;
    }

    /** The samples of family {@code name} whose labels include {@code labels} (name, value pairs). */
    private List<Sample> matching(String name, String... labels) {
        Family f = families.get(name);
        if (f == null) {
            throw new AssertionError("no family " + name);
        }
        List<Sample> found = new ArrayList<>();
        for (Sample s : f.samples()) {
            boolean match = true;
            for (int i = 0; i < labels.length; i += 2) {
                match &= labels[i + 1].equals(s.labels().get(labels[i]));
            }
            if (match) {
                found.add(s);
            }
        }
        return found;
    }

    /** {@code labels} followed by {@code more}: a queue's labels narrowed by a family's own (name, value pairs). */
    public static String[] with(String[] labels, String... more) {
        String[] all = Arrays.copyOf(labels, labels.length + more.length);
        System.arraycopy(more, 0, all, labels.length, more.length);
        return all;
    }
}
