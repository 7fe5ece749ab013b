package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.netlab.Commands;
import io.virtio4j.os.netlab.TapNamespace;
import io.virtio4j.os.netlab.UdpFrames;
import io.virtio4j.os.netlab.UdpTool;
import io.virtio4j.vhost.backend.InProcessBackend;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A tap-mode {@link NetDevice} whose tap (created by the device, by name, as {@code serve net --mode tap:NAME}
 * does) lives in a namespace of its own, served in-process to a {@link NetDriver}. {@link #close()} undoes it all
 * in order, also after a failure: guest (connection ends, device resets), namespace (tap gone from the kernel's
 * view), device (tap descriptor closed).
 */
final class TapRig implements AutoCloseable {
    static final String GUEST_MAC = "52:54:00:12:34:56";
    static final byte[] GUEST_MAC_BYTES = UdpFrames.mac(GUEST_MAC);
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    final NetDevice device;
    final TapNamespace ns;
    final InProcessBackend backend;
    final NetDriver guest;

    private TapRig(NetDevice device, TapNamespace ns, InProcessBackend backend, NetDriver guest) {
        this.device = device;
        this.ns = ns;
        this.backend = backend;
        this.guest = guest;
    }

    /** Skips the calling test where taps cannot be made (no /dev/net/tun, not root, no iproute2). */
    static void assumeTapsWork() {
        assumeTrue(Files.isReadable(Path.of("/dev/net/tun")), "no /dev/net/tun");
        assumeTrue(Files.isExecutable(Path.of("/usr/sbin/ip")) || Files.isExecutable(Path.of("/sbin/ip"))
                || Files.isExecutable(Path.of("/usr/bin/ip")), "no iproute2");
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root (CAP_NET_ADMIN) for taps and namespaces");
    }

    static TapRig start(int pairs, TapPolling polling, int weight, NetDriver.Config guestConfig) {
        String tap = Commands.uniqueName('t');
        NetDevice device = new NetDevice(new NetDevice.Options(pairs, new NetMode.Tap(tap, polling),
                NotificationMode.NOTIFY, 0, weight, new int[0], GUEST_MAC_BYTES, 1500));
        TapNamespace ns = null;
        NetDriver guest = null;
        InProcessBackend.Connected c = null;
        try {
            ns = TapNamespace.create(Commands.uniqueName('s'), device.tapName(), GUEST_MAC);
            c = InProcessBackend.start(device, "tap-test");
            guest = NetDriver.start(c.frontend(), guestConfig);
            return new TapRig(device, ns, c.backend(), guest);
        } catch (RuntimeException | Error e) {
            if (guest == null && c != null) {
                c.frontend().close();
            }
            if (ns != null) {
                ns.close();
            }
            device.close();
            throw e;
        }
    }

    /** Starts {@link UdpTool} in the namespace. */
    Process tool(String... args) {
        return ns.startJava(UdpTool.class, args);
    }

    /** Waits for a line starting with {@code prefix} on the process's output (bounded); returns it. */
    static String awaitLine(Process p, String prefix, long timeoutMillis) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        StringBuilder seen = new StringBuilder();
        while (System.nanoTime() < deadline) {
            if (!r.ready()) {
                if (!p.isAlive() && !r.ready()) {
                    break;
                }
                Thread.sleep(5);
                continue;
            }
            String line = r.readLine();
            if (line == null) {
                break;
            }
            if (line.startsWith(prefix)) {
                return line;
            }
            seen.append(line).append('\n');
        }
        throw new AssertionError("no line '" + prefix + "...' from the namespace tool within " + timeoutMillis
                + " ms; alive=" + p.isAlive() + ", output: " + seen);
    }

    /** Closes the tool's standard input (senders stop) and waits for it to exit. */
    static void finish(Process p) throws Exception {
        p.getOutputStream().close();
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
    }

    /** CPU time of the worker thread serving {@code pair}, in nanoseconds. */
    long workerCpuNanos(int pair) {
        long id = device.workerThreadId(pair);
        assertTrue(id >= 0, "no worker for pair " + pair);
        return THREADS.getThreadCpuTime(id);
    }

    @Override
    public void close() {
        try {
            guest.close();
            backend.awaitEnd();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while closing", e);
        } finally {
            try {
                ns.close();
            } finally {
                device.close();
            }
        }
    }
}
