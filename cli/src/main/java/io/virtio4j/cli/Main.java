package io.virtio4j.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the {@code virtio4j} command line. */
@Command(name = "virtio4j", mixinStandardHelpOptions = true, version = "virtio4j 0.1.0",
        description = "virtio rings and vhost-user on the JVM.",
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

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setExecutionExceptionHandler((ex, line, parse) -> {
            line.getErr().println("virtio4j: " + ex.getMessage());
            return 2;
        });
        System.exit(cl.execute(args));
    }
}
