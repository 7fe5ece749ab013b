package io.virtio4j.cli;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.rng.RngSource;
import io.virtio4j.os.DatagramPair;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.UnixServerSocket;
import io.virtio4j.os.UnixSocket;
import io.virtio4j.vhost.frontend.DriverRing;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static io.virtio4j.cli.CliRun.execute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * QEMU's vhost-user "back-end program conventions" for every {@code serve} device: {@code --socket-path} or
 * {@code --fd} (a listening socket the parent hands down), {@code --print-capabilities} as vhost-user.json's
 * VHostUserBackendCapabilities, and the description files in share/qemu/vhost-user/ as its VhostUserBackend.
 */
class ServeConventionsTest {
    /** vhost-user.json's VHostUserBackendType. */
    private static final Set<String> BACKEND_TYPES = Set.of("9p", "balloon", "block", "caif", "console", "crypto", "gpu",
            "input", "net", "rng", "rpmsg", "rproc-serial", "scsi", "vsock", "fs");
    /**
     * The types whose capabilities carry a {@code features} list, and its enum (VHostUserBackendBlockFeature, ...
     * InputFeature, ...GPUFeature): each feature names a command-line option the back-end takes. Every other type's
     * capabilities are {@code type} alone.
     */
    private static final Map<String, Set<String>> FEATURES = Map.of(
            "block", Set.of("read-only", "blk-file"),
            "input", Set.of("evdev-path", "no-grab"),
            "gpu", Set.of("render-node", "virgl"));
    /** Our serve subcommands and the back-end type each is. */
    private static final Map<String, String> DEVICES = Map.of("blk", "block", "net", "net", "rng", "rng");

    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"blk,block", "net,net", "rng,rng"})
    void printCapabilitiesIsTheSchemasObjectAndIgnoresEverythingElse(String device, String type) {
        // no endpoint, no backing, and an --fd that is no socket: all ignored, nothing served, exit 0
        List<String> option = device.equals("rng") ? List.of("--seed", "2") : List.of("--queues", "2"); // one of its own
        for (List<String> extra : List.of(List.<String>of(), List.of("--fd", "1073741824", option.get(0), option.get(1)))) {
            List<String> args = new ArrayList<>(List.of("serve", device, "--print-capabilities"));
            args.addAll(extra);
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine cl = new CommandLine(new Main());
            cl.setOut(new PrintWriter(out, true));
            cl.setErr(new PrintWriter(err, true));
            assertEquals(0, cl.execute(args.toArray(String[]::new)), err.toString());
            assertEquals("", err.toString());
            JsonObject caps = JsonParser.parseString(out.toString()).getAsJsonObject();
            assertCapabilitiesFollowTheSchema(caps, device);
            assertEquals(type, caps.get("type").getAsString());
        }
    }

    /** VHostUserBackendCapabilities: a union on {@code type}; a feature is an option {@code device} really takes. */
    private static void assertCapabilitiesFollowTheSchema(JsonObject caps, String device) {
        assertTrue(caps.has("type") && caps.get("type").isJsonPrimitive() && caps.get("type").getAsJsonPrimitive().isString(),
                caps::toString);
        String type = caps.get("type").getAsString();
        assertTrue(BACKEND_TYPES.contains(type), type);
        Set<String> allowed = FEATURES.get(type);
        if (allowed == null) {
            assertEquals(Set.of("type"), caps.keySet(), "a " + type + " back-end's capabilities have no other member");
            return;
        }
        assertEquals(Set.of("type", "features"), caps.keySet(), caps::toString);
        JsonArray features = caps.getAsJsonArray("features");
        Set<String> seen = new HashSet<>();
        CommandLine serve = new CommandLine(new Main()).getSubcommands().get("serve").getSubcommands().get(device);
        for (JsonElement f : features) {
            String name = f.getAsString();
            assertTrue(allowed.contains(name), name + " is not a " + type + " feature of vhost-user.json");
            assertTrue(seen.add(name), name + " twice");
            assertNotNull(serve.getCommandSpec().findOption("--" + name), "serve " + device + " claims --" + name + " but has no such option");
        }
    }

    @Test
    void theDescriptionFilesFollowTheSchemaAndNameOurWrappers() throws IOException {
        Path root = Path.of("").toAbsolutePath().getParent(); // tests run in the module's directory
        Path share = root.resolve("share/qemu/vhost-user");
        List<Path> files;
        try (Stream<Path> s = Files.list(share)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
        }
        Set<String> types = new HashSet<>();
        Pattern serveLine = Pattern.compile("\"? serve (\\w+) \"\\$@\"");
        for (Path file : files) {
            String name = file.getFileName().toString();
            // the schema's advice: a double-digit prefix, so that management software sorts files predictably
            assertTrue(name.matches("\\d\\d-[a-z0-9-]+\\.json"), name);
            JsonObject d = JsonParser.parseString(Files.readString(file)).getAsJsonObject();
            // VhostUserBackend: description, type, binary required; tags optional; nothing else
            assertTrue(Set.of("description", "type", "binary", "tags").containsAll(d.keySet()), name + ": " + d.keySet());
            for (String required : List.of("description", "type", "binary")) {
                assertTrue(d.has(required) && d.get(required).getAsJsonPrimitive().isString(), name + ": " + required);
            }
            if (d.has("tags")) {
                for (JsonElement t : d.getAsJsonArray("tags")) {
                    assertTrue(t.getAsJsonPrimitive().isString(), name + ": tags");
                }
            }
            String type = d.get("type").getAsString();
            assertTrue(BACKEND_TYPES.contains(type), name + ": type " + type);
            assertTrue(types.add(type), name + ": a second file for " + type);
            String binary = d.get("binary").getAsString();
            assertTrue(binary.startsWith("/"), name + ": binary must be an absolute path: " + binary);
            // the binary is one of our wrappers, installed by a link (README): the one in bin/ of that name
            Path wrapper = root.resolve("bin").resolve(Path.of(binary).getFileName());
            assertTrue(Files.isExecutable(wrapper), name + ": no executable " + wrapper);
            Matcher m = serveLine.matcher(Files.readString(wrapper));
            assertTrue(m.find(), wrapper + " runs no serve subcommand");
            assertEquals(type, DEVICES.get(m.group(1)), wrapper + " serves " + m.group(1) + ", whose type is not " + type);
        }
        assertEquals(new HashSet<>(DEVICES.values()), types, "one description file per serve device");
        // and every serve device is a subcommand we ship a file for
        assertEquals(DEVICES.keySet(), new CommandLine(new Main()).getSubcommands().get("serve").getSubcommands().keySet().stream()
                .filter(n -> !n.equals("help")).collect(java.util.stream.Collectors.toSet()));
    }

    @Test
    void serveBlkServesThroughAListeningSocketItInherits() throws Throwable {
        Path disk = dir.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(disk.toFile(), "rw")) {
            f.setLength(4 << 20);
        }
        String served = serveThroughInheritedSocket(List.of("serve", "blk", "--blk-file=" + disk),
                socket -> List.of("drive", "blk", "--socket", socket, "--rw", "write", "--verify", "--bs", "4k", "--size", "1m",
                        "--connect-timeout", "60"));
        Matcher result = Pattern.compile("RESULT role=virtio4j requests=\\d+ reads=(\\d+) writes=(\\d+) .*io-errors=0 invalid=0 "
                + "unsupported=0 malformed=0").matcher(served);
        assertTrue(result.find(), served);
        assertEquals(256, Integer.parseInt(result.group(2)), "1 MiB written in 4 KiB requests:\n" + served);
        assertEquals(256, Integer.parseInt(result.group(1)), "and read back to verify:\n" + served);
    }

    @Test
    void serveNetServesThroughAListeningSocketItInherits() throws Throwable {
        // echo: every frame comes back through the loopback back-end and is checked (pattern, length, no duplicate)
        String served = serveThroughInheritedSocket(List.of("serve", "net", "--mode", "loopback"),
                socket -> List.of("drive", "net", "--socket", socket, "--mode", "echo", "--packets", "1000", "--drain", "60",
                        "--connect-timeout", "60"));
        Matcher result = Pattern.compile("RESULT role=virtio4j RX-packets=(\\d+) RX-bytes=\\d+ TX-packets=(\\d+)").matcher(served);
        assertTrue(result.find(), served);
        assertEquals(1000, Integer.parseInt(result.group(1)), "every frame sent reached the back-end:\n" + served);
        assertEquals(1000, Integer.parseInt(result.group(2)), "and came back to the driver, which checked it:\n" + served);
    }

    /**
     * serve rng has no driver command: our front-end library reads 4 KiB through a split ring, which must be the first
     * 4 KiB of the seeded stream, and the back-end's RESULT line counts them.
     */
    @Test
    void serveRngServesThroughAListeningSocketItInherits() throws Throwable {
        String served = serveThroughInheritedSocket(List.of("serve", "rng", "--seed", "7"), (socket, log) -> {
            try (FrontendSession s = FrontendSession.connect(socket, Duration.ofSeconds(60))) {
                long version1 = VirtioFeatures.bit(VirtioFeatures.VERSION_1);
                s.negotiate(version1, version1, FrontendSession.PROTOCOL_FEATURES, 0, 1);
                s.attach(GuestMemory.create("serve-rng-fd", 1 << 20));
                DriverRing ring = s.addRing(RingFormat.SPLIT, 16, 0, DriverOptions.defaults(), true);
                s.start();
                MemorySegment buffer = s.memory().carveSegment(4096, 64);
                ring.queue().add(new ScatterGather(1).writable(s.memory().gpa(buffer), 4096), "only");
                ring.queue().kick();
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos(); // a hang guard
                while (ring.queue().pollUsed() == null) {
                    assertTrue(System.nanoTime() - deadline < 0, () -> "no buffer back; the back-end's output:\n" + log.get());
                    ring.await(Duration.ofMillis(100).toNanos());
                }
                assertEquals(4096, ring.queue().lastUsedLength());
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment want = a.allocate(4096);
                    RngSource.seed(7).fill(want, 4096);
                    assertEquals(-1, want.mismatch(buffer), "the first 4 KiB of the seeded stream");
                }
            }
        });
        assertTrue(served.contains("RESULT role=virtio4j buffers=1 bytes=4096"), served);
    }

    /** What a test does with the back-end at {@code socket}; {@code log} reads what the back-end printed so far. */
    @FunctionalInterface
    private interface Driving {
        void drive(Path socket, java.util.function.Supplier<String> log) throws Exception;
    }

    /**
     * Starts {@code serve} in a child that inherits, as descriptor 3, a listening socket this JVM made and then closed
     * (so the socket accepts only because the child holds it), runs the driver {@code drive} names against its path
     * in this JVM (exit 0: everything checked came back intact), stops the child with SIGTERM as a management tool
     * does, and returns what the child printed.
     */
    private String serveThroughInheritedSocket(List<String> serve, java.util.function.Function<String, List<String>> drive)
            throws Throwable {
        return serveThroughInheritedSocket(serve, (socket, log) -> {
            String[] r = execute(drive.apply(socket.toString()).toArray(String[]::new));
            assertEquals("0", r[0], () -> r[1] + "\nthe back-end's output:\n" + log.get());
        });
    }

    /** The same with any driving done in this JVM. */
    private String serveThroughInheritedSocket(List<String> serve, Driving drive) throws Throwable {
        Path socket = dir.resolve("vhost.sock");
        Path log = dir.resolve("serve.log");
        List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        argv.addAll(serve);
        argv.add("--fd=3");
        InheritingChild child;
        try (UnixServerSocket listener = UnixServerSocket.listen(socket, 4)) {
            child = InheritingChild.start(argv, listener.fileDescriptor().fd(), 3, log);
        }
        try (child) {
            drive.drive(socket, () -> read(log));
            child.signal(InheritingChild.SIGTERM);
            assertTrue(child.waitFor(60_000) >= 0, () -> "the back-end still runs after SIGTERM:\n" + read(log));
        }
        assertTrue(Files.exists(socket), "the socket file is the parent's: the back-end leaves it");
        return read(log);
    }

    @ParameterizedTest
    @ValueSource(strings = {"blk", "net", "rng"})
    void neitherOrBothEndpointsAreOneLineNamingTheFlags(String device) {
        List<String> backing = device.equals("blk") ? List.of("--null", "1M") : List.of();
        assertFirstLine("one of --socket-path=PATH, --fd=FDNUM or --connect=PATH is required", device, backing);
        List<String> both = new ArrayList<>(backing);
        both.addAll(List.of("--socket-path", "/nonexistent/x.sock", "--fd", "3"));
        assertFirstLine("--socket-path=/nonexistent/x.sock, --fd=3: give only one of --socket-path, --fd and --connect", device, both);
        List<String> alias = new ArrayList<>(backing);
        alias.addAll(List.of("--socket", "/nonexistent/x.sock", "--connect", "/nonexistent/y.sock"));
        assertFirstLine("--socket-path=/nonexistent/x.sock, --connect=/nonexistent/y.sock: give only one of --socket-path, --fd and "
                + "--connect", device, alias);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "abc|Invalid value for option '--fd': 'abc' is not an int",
            "-1|--fd=-1: fd -1 is not a listening AF_UNIX stream socket: not a descriptor number",
            "1073741824|--fd=1073741824: fd 1073741824 is not a listening AF_UNIX stream socket: not an open descriptor (EBADF)"})
    void aBadFdNumberIsOneLineNamingTheFlag(String value, String message) {
        assertFirstLine(message, "blk", List.of("--null", "1M", "--fd", value));
        assertFirstLine(message, "net", List.of("--fd", value));
        assertFirstLine(message, "rng", List.of("--fd", value));
    }

    @Test
    void anFdThatIsNotAListeningUnixStreamSocketIsRefusedAndLeftOpen() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket a = pair[0]; UnixSocket b = pair[1]; DatagramPair dgram = DatagramPair.create();
             FileDescriptor memfd = Memfd.create("not-a-socket", 4096)) {
            int connected = a.fileDescriptor().fd();
            assertFirstLine("--fd=" + connected + ": fd " + connected + " is not a listening AF_UNIX stream socket: an AF_UNIX stream "
                    + "socket that is not listening", "blk", List.of("--null", "1M", "--fd", Integer.toString(connected)));
            int datagram = dgram.first().fileDescriptor().fd();
            assertFirstLine("--fd=" + datagram + ": fd " + datagram + " is not a listening AF_UNIX stream socket: an AF_UNIX socket "
                    + "of type SOCK_DGRAM", "net", List.of("--fd", Integer.toString(datagram)));
            int file = memfd.fd();
            assertFirstLine("--fd=" + file + ": fd " + file + " is not a listening AF_UNIX stream socket: not a socket (ENOTSOCK)",
                    "blk", List.of("--null", "1M", "--fd", Integer.toString(file)));
            assertEquals(4096, memfd.size(), "a refused descriptor is not closed: it is not the back-end's");
            assertTrue(a.fileDescriptor().isOpen());
        }
    }

    @Test
    void blkWithoutBackingIsOneLine() {
        assertFirstLine("one of --file=PATH (or --blk-file=PATH) or --null=SIZE is required", "blk",
                List.of("--socket-path", "/nonexistent/x.sock"));
    }

    @Test
    void rngWithTwoSourcesOrABadFileIsOneLineNamingTheFlag() throws IOException {
        assertFirstLine("--source=/etc/hostname, --seed=3: give at most one", "rng",
                List.of("--socket-path", "/nonexistent/x.sock", "--source", "/etc/hostname", "--seed", "3"));
        Path missing = dir.resolve("missing");
        assertFirstLine("--source=" + missing + ": no such file", "rng",
                List.of("--socket-path", "/nonexistent/x.sock", "--source", missing.toString()));
        Path empty = Files.createFile(dir.resolve("empty"));
        assertFirstLine("--source=" + empty + ": has 0 bytes, not 1 to 268435456", "rng",
                List.of("--socket-path", "/nonexistent/x.sock", "--source", empty.toString()));
        assertFirstLine("--source=/dev/urandom: not a regular file (a device such as /dev/urandom is refused: without a"
                + " source the kernel's random bytes are served)", "rng",
                List.of("--socket-path", "/nonexistent/x.sock", "--source", "/dev/urandom"));
        assertFirstLine("--hybrid-spin-ns=-1: must be >= 0", "rng",
                List.of("--socket-path", "/nonexistent/x.sock", "--seed", "1", "--hybrid-spin-ns", "-1"));
    }

    private static void assertFirstLine(String expected, String device, List<String> args) {
        List<String> all = new ArrayList<>(List.of("serve", device));
        all.addAll(args);
        String[] r = execute(all.toArray(String[]::new));
        assertEquals("2", r[0], r[1]);
        assertEquals(expected, r[1].lines().findFirst().orElseThrow(), r[1]);
    }

    private static String read(Path log) {
        try {
            return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "(no output)";
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }
}
