package io.virtio4j.os.netlab;


import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

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

    private final String name;
    private final String tap;
    private final Thread hook;
    private final List<Process> children = new ArrayList<>();
    private boolean closed;

    private TapNamespace(String name, String tap) {
        this.name = name;
        this.tap = tap;
        this.hook = new Thread(() -> Commands.quietly("ip", "netns", "del", name), "netns-cleanup-" + name);
    }

    /**
     * Creates namespace {@code name} and moves the tap {@code tap} (now in this namespace) into it, set up as the
     * class comment says, with {@code guestMac} as the neighbour of {@link #GUEST_IP}.
     */
    public static TapNamespace create(String name, String tap, String guestMac) {
        Commands.run("ip", "netns", "add", name);
        TapNamespace ns = new TapNamespace(name, tap);
        Runtime.getRuntime().addShutdownHook(ns.hook);
        try {
            Commands.run("ip", "link", "set", tap, "netns", name);
            Commands.run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1");
            Commands.run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1");
            Commands.run("ip", "-n", name, "link", "set", tap, "address", TAP_MAC);
            Commands.run("ip", "-n", name, "addr", "add", TAP_IP + "/24", "dev", tap);
            Commands.run("ip", "-n", name, "link", "set", "lo", "up");
            Commands.run("ip", "-n", name, "link", "set", tap, "up");
            Commands.run("ip", "-n", name, "neigh", "replace", GUEST_IP, "lladdr", guestMac, "dev", tap, "nud", "permanent");
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
        return Long.parseLong(Commands.run("ip", "netns", "exec", name, "cat", "/sys/class/net/" + tap + "/statistics/" + counter).trim());
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
        Commands.quietly("ip", "netns", "del", name);
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs anyway
        }
    }
}
