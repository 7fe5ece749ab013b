package io.virtio4j.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.util.List;

/** Entry point of the {@code virtio4j} command line. */
@Command(name = "virtio4j", mixinStandardHelpOptions = true, version = "virtio4j 0.1.0",
        description = "virtio rings and vhost-user on the JVM.",
        footer = {"", "Example: virtio4j serve net --socket-path /tmp/vhost.sock --mode macswap"},
        subcommands = {BenchCommand.class, ExperimentsCommand.class, ServeCommand.class, DriveCommand.class, JmhCommand.class,
                PairedCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /**
     * The command line as a user runs it (tests run this one too). Every error is one line on stderr, exit status 2:
     * a bad option names its flag and the value (picocli's own message, or the command's), without the usage text
     * picocli would print after it (--help has that); an unknown option gets picocli's suggestions on the same line;
     * an error of the run itself is prefixed "virtio4j: ".
     */
    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        // picocli's own help command: its usage gets an example like every command of ours
        cl.getSubcommands().get("help").getCommandSpec().usageMessage()
                .footer("", "Example: virtio4j help serve");
        cl.setParameterExceptionHandler((ex, args) -> {
            String line = ex.getMessage();
            if (line.startsWith("Missing required subcommand") && !ex.getCommandLine().getSubcommands().isEmpty()) {
                line += ": " + String.join(", ", ex.getCommandLine().getSubcommands().keySet());
            } else if (ex instanceof CommandLine.UnmatchedArgumentException u) {
                List<String> suggestions = u.getSuggestions();
                if (!suggestions.isEmpty()) {
                    line += "; did you mean " + String.join(" or ", suggestions) + "?";
                }
            }
            ex.getCommandLine().getErr().println(line);
            return 2;
        });
        cl.setExecutionExceptionHandler((ex, line, parse) -> {
            line.getErr().println("virtio4j: " + (ex.getMessage() != null ? ex.getMessage() : ex.toString()));
            return 2;
        });
        return cl;
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }
}
