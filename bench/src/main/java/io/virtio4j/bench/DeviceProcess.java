package io.virtio4j.bench;

import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.stats.QueueCounters;
import io.virtio4j.os.EventFd;
import io.virtio4j.vhost.notify.EventFdNotifier;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Mmap;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.os.UnixSocket;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The device side of {@code bench --processes 2}, in a JVM of its own. It listens on the socket path it is
 * given; the driver process connects and, for every run, sends the configuration with the run's memfd and its
 * kick and call eventfds. The device maps the memfd, answers "ready", runs {@link DeviceLoop} until the driver
 * sets the stop word, and answers with what it measured. One process serves all runs of an invocation, so its
 * JIT warms up with the warm-up runs like the driver's.
 *
 * <p>Wire format: each message is one line of {@code key=value} pairs separated by spaces, UTF-8, ending in
 * a newline; the run request carries 3 descriptors (memfd, kick, call).
 */
public final class DeviceProcess {
    private DeviceProcess() {
    }

    public static void main(String[] args) throws Exception {
        Path path = Path.of(args[0]);
        try (UnixServerSocket listener = UnixServerSocket.listen(path, 1);
             UnixSocket s = listener.accept();
             Arena io = Arena.ofConfined()) {
            Files.deleteIfExists(path);
            MemorySegment buf = io.allocate(4096);
            while (true) {
                FileDescriptor[] fds = new FileDescriptor[3];
                Map<String, String> request = Wire.receive(s, buf, fds);
                if (request == null || request.containsKey("exit")) {
                    return;
                }
                // all at once: a packed ring of 48 is valid, but not the split default with queue-size 48 first
                BenchConfig cfg = BenchConfig.defaults().with(request);
                Map<String, String> result = runOnce(cfg, fds, s, buf);
                Wire.send(s, buf, result);
            }
        }
    }

    private static Map<String, String> runOnce(BenchConfig cfg, FileDescriptor[] fds, UnixSocket s, MemorySegment buf)
            throws InterruptedException {
        BenchLayout layout = BenchLayout.of(cfg);
        try (FileDescriptor memfd = fds[0]; Arena arena = Arena.ofShared();
             EventFdNotifier kick = new EventFdNotifier(EventFd.adopt(fds[1]));
             EventFdNotifier call = new EventFdNotifier(EventFd.adopt(fds[2]))) {
            MemorySegment mem = Mmap.mapShared(memfd, layout.totalBytes(), arena);
            DeviceQueue device = layout.deviceQueue(mem, call);
            Wire.send(s, buf, Map.of("ready", "1"));
            DeviceLoop.Result r = new DeviceLoop(layout, mem, device, kick).run();
            Map<String, String> out = new LinkedHashMap<>();
            out.put("cpu", Long.toString(r.cpuNanos()));
            out.put("alloc", Long.toString(r.allocatedBytes()));
            out.put("spurious", Long.toString(r.spurious()));
            out.put("pin", r.pinError() == null ? "ok" : r.pinError().replace(' ', '_'));
            QueueCounters c = device.counters();
            out.put("buffers", Long.toString(c.buffers));
            out.put("completions", Long.toString(c.completions));
            out.put("notificationsSent", Long.toString(c.notificationsSent));
            out.put("notificationsSuppressed", Long.toString(c.notificationsSuppressed));
            out.put("availIdxReads", Long.toString(c.availIdxReads));
            out.put("usedIdxWrites", Long.toString(c.usedIdxWrites));
            out.put("enableCalls", Long.toString(c.enableCalls));
            out.put("disableCalls", Long.toString(c.disableCalls));
            out.put("errors", Long.toString(c.errors));
            return out;
        }
    }

    /** Device counters as the child reported them. */
    static QueueCounters counters(Map<String, String> m) {
        QueueCounters c = new QueueCounters();
        c.buffers = Long.parseLong(m.get("buffers"));
        c.completions = Long.parseLong(m.get("completions"));
        c.notificationsSent = Long.parseLong(m.get("notificationsSent"));
        c.notificationsSuppressed = Long.parseLong(m.get("notificationsSuppressed"));
        c.availIdxReads = Long.parseLong(m.get("availIdxReads"));
        c.usedIdxWrites = Long.parseLong(m.get("usedIdxWrites"));
        c.enableCalls = Long.parseLong(m.get("enableCalls"));
        c.disableCalls = Long.parseLong(m.get("disableCalls"));
        c.errors = Long.parseLong(m.get("errors"));
        return c;
    }

    /** One-line key=value messages over the socket, with optional descriptors. */
    static final class Wire {
        private Wire() {
        }

        static void send(UnixSocket s, MemorySegment buf, Map<String, String> m, FileDescriptor... fds) {
            StringBuilder sb = new StringBuilder();
            m.forEach((k, v) -> sb.append(sb.isEmpty() ? "" : " ").append(k).append('=').append(v));
            byte[] b = sb.append('\n').toString().getBytes(StandardCharsets.UTF_8);
            if (b.length > buf.byteSize()) {
                throw new IllegalArgumentException("message of " + b.length + " bytes is too long");
            }
            MemorySegment.copy(MemorySegment.ofArray(b), 0, buf, 0, b.length);
            s.sendmsg(buf, b.length, fds);
        }

        /** The next message, or null when the peer closed; descriptors that came with it go to {@code fds}. */
        static Map<String, String> receive(UnixSocket s, MemorySegment buf, FileDescriptor[] fds) {
            long at = 0;
            FileDescriptor[] none = new FileDescriptor[0];
            while (at == 0 || buf.get(ValueLayout.JAVA_BYTE, at - 1) != '\n') {
                UnixSocket.Received r = s.recvmsg(buf.asSlice(at), at == 0 ? fds : none);
                if (r.bytes() == 0) {
                    return null;
                }
                at += r.bytes();
            }
            String line = new String(buf.asSlice(0, at - 1).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
            Map<String, String> m = new LinkedHashMap<>();
            for (String kv : line.split(" ")) {
                int eq = kv.indexOf('=');
                m.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
            return m;
        }
    }
}
