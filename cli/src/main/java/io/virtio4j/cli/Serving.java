package io.virtio4j.cli;

import io.virtio4j.devices.metrics.InvalidMetricsAddressException;
import io.virtio4j.devices.metrics.MetricsServer;
import io.virtio4j.devices.metrics.MetricsSource;
import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.os.NotAListeningSocketException;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.backend.VirtioDevice;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/** What every {@code serve} subcommand shares: where the back-end is reached, and serving until a signal. */
final class Serving {
    private Serving() {
    }

    /**
     * Where the back-end is reached, in the names of QEMU's vhost-user "back-end program conventions" (what libvirt
     * and other management tools start a back-end with): {@code --socket-path=PATH} (listen there; {@code --socket}
     * is the same option), {@code --fd=FDNUM} (listen on a socket the parent made, bound and set listening), or
     * our {@code --connect=PATH} (connect to a listening front-end): exactly one. {@code --print-capabilities}
     * prints the device's capabilities as JSON and ends, whatever else is given. A mixin, not an argument group:
     * the group's own checks would refuse {@code --print-capabilities} alone, and its messages name no value.
     */
    static final class Endpoint {
        @Option(names = {"--socket-path", "--socket"}, paramLabel = "PATH", description = "listen on PATH (server, the default role). "
                + "Exactly one of --socket-path, --fd and --connect")
        Path socket;
        @Option(names = "--fd", paramLabel = "FDNUM", description = "listen on descriptor FDNUM: an AF_UNIX stream socket "
                + "the parent process bound and set listening, and let this one inherit")
        Integer fd;
        @Option(names = "--connect", paramLabel = "PATH", description = "connect to a front-end listening on PATH; reconnect when it goes")
        Path connect;
        @Option(names = "--print-capabilities", description = "print the back-end's capabilities (JSON, QEMU's "
                + "vhost-user.json schema) and exit")
        boolean printCapabilities;

        /** The socket inherited through {@link #fd}, once {@link #check} adopted it. */
        private UnixServerSocket inherited;

        /**
         * Checks that exactly one way to reach the back-end was given and, for {@code --fd}, adopts the inherited
         * socket; refuses with a one-line error naming the flag and the value.
         */
        void check(CommandSpec spec) {
            List<String> given = new ArrayList<>();
            if (socket != null) {
                given.add("--socket-path=" + socket);
            }
            if (fd != null) {
                given.add("--fd=" + fd);
            }
            if (connect != null) {
                given.add("--connect=" + connect);
            }
            if (given.isEmpty()) {
                throw new ParameterException(spec.commandLine(),
                        "one of --socket-path=PATH, --fd=FDNUM or --connect=PATH is required");
            }
            if (given.size() > 1) {
                throw new ParameterException(spec.commandLine(),
                        String.join(", ", given) + ": give only one of --socket-path, --fd and --connect");
            }
            if (fd != null) {
                try {
                    inherited = UnixServerSocket.adopt(fd);
                } catch (NotAListeningSocketException e) {
                    throw new ParameterException(spec.commandLine(), "--fd=" + fd + ": " + e.getMessage());
                }
            }
        }

        /**
         * With {@code --print-capabilities}: prints the capabilities of a back-end of {@code type} (a
         * VHostUserBackendType of vhost-user.json) on {@code spec}'s standard output and returns true. The schema
         * defines a {@code features} list only for some types (block: the options {@code --read-only} and
         * {@code --blk-file}); for the others the object has {@code type} alone, so {@code features} is null there.
         */
        boolean printCapabilities(CommandSpec spec, String type, List<String> features) {
            if (!printCapabilities) {
                return false;
            }
            StringBuilder json = new StringBuilder("{\n  \"type\": \"").append(type).append('"');
            if (features != null) {
                json.append(",\n  \"features\": [");
                for (int i = 0; i < features.size(); i++) {
                    json.append(i == 0 ? "\n" : ",\n").append("    \"").append(features.get(i)).append('"');
                }
                json.append(features.isEmpty() ? "]" : "\n  ]");
            }
            json.append("\n}");
            PrintWriter out = spec.commandLine().getOut();
            out.println(json);
            out.flush();
            return true;
        }
    }

    /**
     * {@code --metrics unix:PATH|tcp:HOST:PORT}: where the device's counters are served in the Prometheus text format
     * ({@link MetricsServer}; TCP on a loopback address only, as it has no authentication).
     */
    static final class Metrics {
        @Option(names = "--metrics", paramLabel = "unix:PATH|tcp:HOST:PORT", description = "serve the counters in the "
                + "Prometheus text format (GET /metrics) on a unix socket or a loopback TCP port (0: any free one)")
        String metrics;

        private SocketAddress address;

        /**
         * Parses the address and refuses a unix path that is the vhost-user socket's ({@code endpoint}'s
         * {@code --socket} or {@code --connect}): binding there would take the path from the back-end; refuses with a
         * one-line error naming the flag and the value.
         */
        void check(CommandSpec spec, Endpoint endpoint) {
            if (metrics != null) {
                try {
                    address = MetricsServer.parse(metrics);
                } catch (InvalidMetricsAddressException e) {
                    throw new ParameterException(spec.commandLine(), "--metrics=" + e.getMessage());
                }
                if (address instanceof UnixDomainSocketAddress unix) {
                    Path path = unix.getPath().toAbsolutePath().normalize();
                    for (Path vhost : new Path[] {endpoint.socket, endpoint.connect}) {
                        if (vhost != null && vhost.toAbsolutePath().normalize().equals(path)) {
                            throw new ParameterException(spec.commandLine(), "--metrics=" + metrics + ": " + vhost
                                    + " is the vhost-user socket; the metrics need a path of their own");
                        }
                    }
                }
            }
        }

        /** Starts serving {@code source}'s counters labelled {@code device="<device>"}, or null without --metrics. */
        MetricsServer start(MetricsSource source, String device) {
            if (address == null) {
                return null;
            }
            try {
                return MetricsServer.start(address, () -> {
                    PrometheusText text = new PrometheusText();
                    source.collect(text, device);
                    return text.text();
                });
            } catch (UncheckedIOException e) {
                throw new IllegalStateException("--metrics=" + metrics + ": " + e.getCause().getMessage(), e);
            }
        }
    }

    /**
     * Prints {@code banner}, then serves {@code device} at {@code endpoint} (already {@link Endpoint#check checked}),
     * one front-end after another, until the process ends. Every {@code statsPeriod} seconds (0: never)
     * {@code printStats} runs on a daemon thread; SIGINT and SIGTERM stop accepting (closing the back-end and its
     * connection), then run {@code shutdown} (stop the device, print its final statistics, close what it served).
     * With {@code --metrics} the device's counters are served (labelled {@code device="<name>"}) from before the
     * banner until the end.
     */
    static <D extends VirtioDevice & MetricsSource> void serve(Endpoint endpoint, Metrics metrics, D device, String name,
                      BackendOptions options, int statsPeriod, Runnable printStats, Runnable shutdown, String banner)
            throws Exception {
        MetricsServer scraped = metrics.start(device, name);
        VhostUserBackendEndpoint backend = new VhostUserBackendEndpoint(() -> new VhostUserSession(device, options));
        if (statsPeriod > 0) {
            ScheduledExecutorService printer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "virtio4j-stats");
                t.setDaemon(true); // never keeps the process alive: it ends with the serving thread
                return t;
            });
            printer.scheduleAtFixedRate(printStats, statsPeriod, statsPeriod, TimeUnit.SECONDS);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                backend.close();
                shutdown.run();
            } finally {
                if (scraped != null) {
                    scraped.close(); // also when the shutdown failed: its socket file must not stay behind
                }
                System.out.flush();
            }
        }, "virtio4j-shutdown"));
        System.out.println(banner);
        if (scraped != null) {
            System.out.println("metrics: " + scraped.describe() + " (GET /metrics)");
        }
        System.out.flush();
        if (endpoint.socket != null) {
            backend.listen(endpoint.socket);
        } else if (endpoint.inherited != null) {
            backend.listen(endpoint.inherited);
        } else {
            backend.connect(endpoint.connect);
        }
    }
}
