package io.virtio4j.devices.net.lab;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network namespace of our own holding a tap, so that real kernel traffic flows through the tap without
 * touching the machine's own interfaces and addresses: the tap is moved in, given {@link #TAP_MAC} and
 * {@link #TAP_IP}/24, IPv6 off (no router solicitations or DAD frames), brought up, with a permanent neighbour
 * entry {@link #GUEST_IP} -> the guest's MAC, so datagrams sent there go out through the tap with no ARP.
 * Link-local addresses only (169.254.0.0/16), inside the namespace only.
 *
 * <p>{@link #close()} deletes the namespace, which takes the tap with it (its descriptor stays valid and reads
 * EBADFD); a shutdown hook does the same if the JVM exits first. Needs root and iproute2.
 */
public final class TapNamespace implements AutoCloseable {
    public static final String TAP_IP = "169.254.77.1";
    public static final String GUEST_IP = "169.254.77.2";
    public static final String TAP_MAC = "02:76:34:6a:00:01";
    private static final AtomicInteger NEXT = new AtomicInteger();

    private final String name;
    private final String tap;
    private final Thread hook;
    private final List<Process> children = new ArrayList<>();
    private boolean closed;

    private TapNamespace(String name, String tap) {
        this.name = name;
        this.tap = tap;
        this.hook = new Thread(() -> quietly("ip", "netns", "del", name), "netns-cleanup-" + name);
    }

    /** A short name unique on this machine now: {@code prefix}, this JVM's pid and a counter (at most 15 bytes). */
    public static String uniqueName(String prefix) {
        String n = prefix + (ProcessHandle.current().pid() % 1_000_000) + "n" + NEXT.incrementAndGet();
        if (n.length() > 15) {
            throw new IllegalArgumentException("name too long: " + n);
        }
        return n;
    }

    /**
     * Creates namespace {@code name} and moves the tap {@code tap} (now in this namespace) into it, set up as the
     * class comment says, with {@code guestMac} as the neighbour of {@link #GUEST_IP}.
     */
    public static TapNamespace create(String name, String tap, String guestMac) {
        run("ip", "netns", "add", name);
        TapNamespace ns = new TapNamespace(name, tap);
        Runtime.getRuntime().addShutdownHook(ns.hook);
        try {
            run("ip", "link", "set", tap, "netns", name);
            run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1");
            run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1");
            run("ip", "-n", name, "link", "set", tap, "address", TAP_MAC);
            run("ip", "-n", name, "addr", "add", TAP_IP + "/24", "dev", tap);
            run("ip", "-n", name, "link", "set", "lo", "up");
            run("ip", "-n", name, "link", "set", tap, "up");
            run("ip", "-n", name, "neigh", "replace", GUEST_IP, "lladdr", guestMac, "dev", tap, "nud", "permanent");
            return ns;
        } catch (RuntimeException e) {
            ns.close();
            throw e;
        }
    }

    public String name() {
        return name;
    }

    public String tap() {
        return tap;
    }

    /** A counter of the tap in the namespace, e.g. {@code tx_dropped} (frames the tap's queue had no room for). */
    public long tapStatistic(String counter) {
        return Long.parseLong(run("ip", "netns", "exec", name, "cat", "/sys/class/net/" + tap + "/statistics/" + counter).trim());
    }

    /**
     * Starts {@code main} in a JVM inside the namespace, with this JVM's java and class path; its output goes to
     * the returned process's streams. Killed by {@link #close()} if still running.
     */
    public synchronized Process startJava(Class<?> main, String... args) {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", name, java, "-XX:+UseSerialGC", "-Xmx64m",
                "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(Arrays.asList(args));
        try {
            Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            children.add(p);
            return p;
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + cmd, e);
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Process p : children) {
            p.destroyForcibly();
            try {
                p.getInputStream().close();
                p.getOutputStream().close();
                p.getErrorStream().close();
            } catch (IOException ignored) {
                // closing a pipe of a killed process
            }
        }
        quietly("ip", "netns", "del", name);
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs anyway
        }
    }

    /** Runs {@code argv} (bounded wait) and returns its output; throws with the output when it fails. */
    public static String run(String... argv) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).redirectInput(new File("/dev/null")).start();
            // Streams closed here rather than later by the JDK's reaper thread: callers count descriptors.
            try (var in = p.getInputStream(); var out = p.getOutputStream(); var err = p.getErrorStream()) {
                if (!p.waitFor(30, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new IllegalStateException(String.join(" ", argv) + ": no exit within 30 s");
                }
                String output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                if (p.exitValue() != 0) {
                    throw new IllegalStateException(String.join(" ", argv) + " exited " + p.exitValue() + ": " + output.trim());
                }
                return output;
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", argv), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + String.join(" ", argv), e);
        }
    }

    private static void quietly(String... argv) {
        try {
            run(argv);
        } catch (RuntimeException ignored) {
            // already gone
        }
    }
}
