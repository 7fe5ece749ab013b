package io.virtio4j.bench;

import java.util.List;
import java.util.function.UnaryOperator;

/**
 * A benchmark option out of range, named by the field of the configuration that holds it ({@code bufSize},
 * {@code ringSize}, ...), never by a command-line flag: a front-end maps the names to its own spelling with
 * {@link #describe}.
 */
public final class InvalidBenchOptionException extends IllegalArgumentException {
    private final String template;
    private final List<String> options;

    /**
     * @param template the message, with one {@code %s} per entry of {@code options} where its name goes; values
     *                 from a user go in through {@link #literal}
     * @param options  the option fields the message names, the offending one first
     */
    InvalidBenchOptionException(String template, String... options) {
        super(template.formatted((Object[]) options));
        this.template = template;
        this.options = List.of(options);
    }

    /** {@code value} as text for a template: a {@code %} in a user's value must not be read as a placeholder. */
    static String literal(Object value) {
        return String.valueOf(value).replace("%", "%%");
    }

    /** The option fields the message names, the offending one first. */
    public List<String> options() {
        return options;
    }

    /** The message with each option name replaced by {@code nameOf} of it (e.g. a command-line flag). */
    public String describe(UnaryOperator<String> nameOf) {
        return template.formatted(options.stream().map(nameOf).toArray());
    }
}
