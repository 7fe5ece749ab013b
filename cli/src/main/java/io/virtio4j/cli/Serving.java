package io.virtio4j.cli;

import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.backend.VirtioDevice;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/** What every {@code serve} subcommand shares: where the back-end is reached, and serving until a signal. */
final class Serving {
    private Serving() {
    }

    /** {@code --socket} or {@code --connect}: one of them (an {@code @ArgGroup(multiplicity = "1")}). */
    static final class Endpoint {
        @Option(names = "--socket", paramLabel = "PATH", description = "listen on PATH (server, the default role)")
        Path socket;
        @Option(names = "--connect", paramLabel = "PATH", description = "connect to a front-end listening on PATH; reconnect when it goes")
        Path connect;
    }

    /**
     * Prints {@code banner}, then serves {@code device} at {@code endpoint}, one front-end after another, until the
     * process ends. Every {@code statsPeriod} seconds (0: never) {@code printStats} runs on a daemon thread; SIGINT
     * and SIGTERM stop accepting (closing the back-end and its connection), then run {@code shutdown} (stop the
     * device, print its final statistics, close what it served).
     */
    static void serve(Endpoint endpoint, VirtioDevice device, BackendOptions options, int statsPeriod,
                      Runnable printStats, Runnable shutdown, String banner) throws Exception {
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
            backend.close();
            shutdown.run();
            System.out.flush();
        }, "virtio4j-shutdown"));
        System.out.println(banner);
        System.out.flush();
        if (endpoint.socket != null) {
            backend.listen(endpoint.socket);
        } else {
            backend.connect(endpoint.connect);
        }
    }
}
