package io.virtio4j.devices.metrics;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.IntFunction;
import java.util.function.IntToLongFunction;
import java.util.regex.Pattern;

/**
 * One scrape in Prometheus' text exposition format 0.0.4: metric families, each written as its {@code # HELP} and
 * {@code # TYPE} lines followed by all of its samples, whatever order the samples were given in (the format wants a
 * family's lines together, and several sources may add to one family: a counter every device has). Names and labels
 * are checked as they are added, label values and help texts escaped, so what {@link #text()} returns always parses.
 *
 * <p>Counters are named with the {@code _total} suffix (the 0.0.4 family name includes it) and count in base units
 * (bytes, not KiB). Built on the scraper's thread, never on a queue thread: it allocates freely.
 */
public final class PrometheusText {
    /** The Content-Type of this format, as Prometheus asks for it. */
    public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private static final Pattern METRIC_NAME = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
    private static final Pattern LABEL_NAME = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");

    private final Map<String, Family> families = new LinkedHashMap<>();

    /** The counter family {@code name} (ending in {@code _total}), made on first use. */
    public Family counter(String name, String help) {
        if (!name.endsWith("_total")) {
            throw new IllegalArgumentException("counter " + name + ": a counter's name ends in _total");
        }
        return family(name, "counter", help);
    }

    /** The gauge family {@code name}, made on first use. */
    public Family gauge(String name, String help) {
        return family(name, "gauge", help);
    }

    private Family family(String name, String type, String help) {
        if (!METRIC_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("metric name " + name + " is not [a-zA-Z_:][a-zA-Z0-9_:]*");
        }
        Objects.requireNonNull(help, "help");
        Family f = families.get(name);
        if (f == null) {
            f = new Family(name, type, help);
            families.put(name, f);
        } else if (!f.type.equals(type) || !f.help.equals(help)) {
            throw new IllegalArgumentException("metric " + name + " is already a " + f.type + " with help \"" + f.help
                    + "\": it cannot also be a " + type + " with help \"" + help + "\"");
        }
        return f;
    }

    /** The exposition: every family with its samples, in the order the families were first asked for. */
    public String text() {
        StringBuilder b = new StringBuilder(4096);
        for (Family f : families.values()) {
            b.append("# HELP ").append(f.name).append(' ');
            escape(b, f.help, false);
            b.append('\n');
            b.append("# TYPE ").append(f.name).append(' ').append(f.type).append('\n');
            for (String line : f.samples) {
                b.append(line).append('\n');
            }
        }
        return b.toString();
    }

    /** One metric family: its samples, one per distinct label set. */
    public static final class Family {
        private final String name;
        private final String type;
        private final String help;
        private final List<String> samples = new ArrayList<>();
        private final Set<Map<String, String>> labelSets = new HashSet<>();

        private Family(String name, String type, String help) {
            this.name = name;
            this.type = type;
            this.help = help;
        }

        /**
         * Adds a sample of {@code value} with {@code labels} given as name, value, name, value...; returns this family.
         *
         * @throws IllegalArgumentException for a label name that is not one, a name given twice, an odd count, or a
         *         label set this family already has (a series must be unique)
         */
        public Family sample(long value, String... labels) {
            if (labels.length % 2 != 0) {
                throw new IllegalArgumentException(name + ": labels come as name, value pairs; " + labels.length
                        + " strings given");
            }
            StringBuilder b = new StringBuilder(name);
            // the series' identity: its label set, whatever the order the labels were given in
            Map<String, String> names = new TreeMap<>();
            for (int i = 0; i < labels.length; i += 2) {
                String label = labels[i];
                if (!LABEL_NAME.matcher(label).matches() || label.startsWith("__")) {
                    throw new IllegalArgumentException(name + ": label name " + label
                            + " is not [a-zA-Z_][a-zA-Z0-9_]* or starts with __ (reserved)");
                }
                if (names.containsKey(label)) {
                    throw new IllegalArgumentException(name + ": label " + label + " given twice");
                }
                names.put(label, Objects.requireNonNull(labels[i + 1], label));
                b.append(i == 0 ? '{' : ',').append(label).append("=\"");
                escape(b, labels[i + 1], true);
                b.append('"');
            }
            if (labels.length > 0) {
                b.append('}');
            }
            if (!labelSets.add(names)) {
                throw new IllegalArgumentException("duplicate series " + b);
            }
            samples.add(b.append(' ').append(value).toString());
            return this;
        }

        /**
         * Adds {@code count} samples, the {@code i}th of {@code value.applyAsLong(i)} labelled {@code labels.apply(i)}
         * (as {@link #sample} takes them): the one shape of a family with one sample per queue or pair.
         */
        public Family samples(int count, IntToLongFunction value, IntFunction<String[]> labels) {
            for (int i = 0; i < count; i++) {
                sample(value.applyAsLong(i), labels.apply(i));
            }
            return this;
        }
    }

    /** Backslash and line feed escaped (and in a label value the double quote too), as the format says. */
    private static void escape(StringBuilder b, String s, boolean labelValue) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '"' -> b.append(labelValue ? "\\\"" : "\"");
                default -> b.append(c);
            }
        }
    }
}
