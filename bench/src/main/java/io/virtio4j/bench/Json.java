package io.virtio4j.bench;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A minimal JSON writer for the benchmark's reports: maps, lists, strings, numbers, booleans, null. */
public final class Json {
    private Json() {
    }

    public static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void write(StringBuilder sb, Object v, int indent) {
        switch (v) {
            case null -> sb.append("null");
            case String s -> string(sb, s);
            case Boolean b -> sb.append(b);
            case Integer i -> sb.append(i);
            case Long l -> sb.append(l);
            case Double d -> number(sb, d);
            case Float f -> number(sb, f);
            case double[] arr -> {
                sb.append('[');
                for (int i = 0; i < arr.length; i++) {
                    if (i > 0) {
                        sb.append(", ");
                    }
                    number(sb, arr[i]);
                }
                sb.append(']');
            }
            case Map<?, ?> m -> {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    sb.append(first ? "\n" : ",\n");
                    first = false;
                    pad(sb, indent + 1);
                    string(sb, String.valueOf(e.getKey()));
                    sb.append(": ");
                    write(sb, e.getValue(), indent + 1);
                }
                if (!first) {
                    sb.append('\n');
                    pad(sb, indent);
                }
                sb.append('}');
            }
            case List<?> l -> {
                sb.append('[');
                boolean first = true;
                for (Object o : l) {
                    sb.append(first ? "\n" : ",\n");
                    first = false;
                    pad(sb, indent + 1);
                    write(sb, o, indent + 1);
                }
                if (!first) {
                    sb.append('\n');
                    pad(sb, indent);
                }
                sb.append(']');
            }
            default -> throw new IllegalArgumentException("cannot write " + v.getClass() + " as JSON");
        }
    }

    private static void number(StringBuilder sb, double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            sb.append("null");
        } else if (d == Math.rint(d) && Math.abs(d) < 1e15) {
            sb.append((long) d);
        } else {
            sb.append(String.format(Locale.ROOT, "%.6g", d));
        }
    }

    private static void pad(StringBuilder sb, int indent) {
        sb.append("  ".repeat(indent));
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
