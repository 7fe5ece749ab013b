package io.virtio4j.cli;

import io.virtio4j.bench.InvalidBenchOptionException;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

import java.lang.reflect.Field;

/**
 * The library names a bad option by its configuration field ({@code bufSize}); the command line reports it by
 * its flag ({@code --buf-size}). A command's option fields carry the configuration's field names, so the flag
 * is the option whose annotated field has that name.
 */
final class OptionFlags {
    private OptionFlags() {
    }

    /** The flag of the option held in field {@code field} of {@code spec}'s command, or the name itself. */
    static String flagOf(CommandSpec spec, String field) {
        for (OptionSpec o : spec.options()) {
            if (o.userObject() instanceof Field f && f.getName().equals(field)) {
                return o.longestName();
            }
        }
        return field;
    }

    /** {@code e} as a command-line error, in the command's flags. */
    static ParameterException rejected(CommandSpec spec, InvalidBenchOptionException e) {
        return new ParameterException(spec.commandLine(), e.describe(name -> flagOf(spec, name)), e);
    }
}
