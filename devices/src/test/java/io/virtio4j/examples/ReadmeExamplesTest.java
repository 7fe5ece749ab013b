package io.virtio4j.examples;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.backend.BackendOptions;
import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.frontend.DriverRing;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The README's "Use as a library" examples: the code the README shows is the code here, word for word (each
 * {@code <!-- example: NAME -->} block against the lines between {@code // README:NAME} and {@code // README:end} in
 * this package's sources), and it works: the ring example answers every request, split and packed; the device
 * example, served on a socket and driven through a {@link FrontendSession}, answers every request exactly once with
 * the right bytes, whatever the shape of its buffers.
 */
@ExtendWith(NoFdLeaks.class)
class ReadmeExamplesTest {
    private static final Path SOURCES = Path.of("src/test/java/io/virtio4j/examples");
    private static final Path README = Path.of("../README.md");
    private static final Duration PATIENCE = Duration.ofSeconds(20);
    private static final Pattern README_BLOCK =
            Pattern.compile("<!-- example: ([a-z-]+) -->\\n```java\\n(.*?)```\\n", Pattern.DOTALL);
    private static final Pattern SOURCE_REGION =
            Pattern.compile("^[ \\t]*// README:([a-z-]+)\\n(.*?)^[ \\t]*// README:end\\n", Pattern.DOTALL | Pattern.MULTILINE);

    @Test
    void theReadmeShowsTheExamplesAsTheyAreInTheSources() throws IOException {
        List<String> inSources = new ArrayList<>();
        try (var files = Files.list(SOURCES)) {
            for (Path f : files.sorted().toList()) {
                Matcher m = SOURCE_REGION.matcher(Files.readString(f));
                while (m.find()) {
                    inSources.add(m.group(1) + "\n" + dedent(m.group(2)));
                }
            }
        }
        List<String> inReadme = new ArrayList<>();
        Matcher m = README_BLOCK.matcher(Files.readString(README));
        while (m.find()) {
            inReadme.add(m.group(1) + "\n" + m.group(2));
        }
        assertEquals(List.of("device", "ring", "serve"), inSources.stream().map(s -> s.substring(0, s.indexOf('\n')))
                .sorted().toList(), "the regions marked in the sources");
        assertEquals(inSources.stream().sorted().toList(), inReadme.stream().sorted().toList(),
                "README.md's example blocks must be the marked regions of " + SOURCES + ", dedented");
    }

    /** The coordinates the README gives are the project's: its version, and artifacts that exist. */
    @Test
    void theReadmeGivesTheProjectsCoordinates() throws IOException {
        String pom = Files.readString(Path.of("pom.xml"));
        Matcher v = Pattern.compile("<artifactId>virtio4j-parent</artifactId>\\s*<version>([^<]+)</version>").matcher(pom);
        assertTrue(v.find(), "the parent's version in devices/pom.xml");
        String readme = Files.readString(README);
        Matcher dep = Pattern.compile("<groupId>([^<]+)</groupId>\\s*<artifactId>([^<]+)</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(readme);
        assertTrue(dep.find(), "a dependency block in README.md");
        assertEquals("io.virtio4j", dep.group(1));
        assertTrue(Files.isRegularFile(Path.of("..", dep.group(2).substring("virtio4j-".length()), "pom.xml")),
                "README.md names artifact " + dep.group(2) + ", which has no module");
        assertEquals(v.group(1), dep.group(3), "the version README.md gives");
        assertTrue(readme.contains("version `" + v.group(1) + "`"), "README.md says version `" + v.group(1) + "`");
    }

    /** Removes the indentation every non-blank line shares. */
    private static String dedent(String block) {
        String[] lines = block.split("\n", -1);
        int common = Integer.MAX_VALUE;
        for (String l : lines) {
            if (!l.isBlank()) {
                common = Math.min(common, l.length() - l.stripLeading().length());
            }
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < lines.length - 1; i++) { // the block ends with a newline: the last piece is empty
            b.append(lines[i].isBlank() ? "" : lines[i].substring(common)).append('\n');
        }
        return b.toString();
    }

    /** Printable ASCII, so that the expected answer comes from String.toUpperCase, not from the device's code. */
    private static byte[] request(SplittableRandom rnd, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (' ' + rnd.nextInt(95));
        }
        return b;
    }

    private static byte[] upper(byte[] b) {
        return new String(b, StandardCharsets.US_ASCII).toUpperCase(Locale.ROOT).getBytes(StandardCharsets.US_ASCII);
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void theRingExampleAnswersTheRequest(RingFormat format) {
        SplittableRandom rnd = new SplittableRandom(format.ordinal());
        for (int length : new int[] {1, 13, 4096, 1 + rnd.nextInt(4096)}) {
            byte[] request = request(rnd, length);
            try (Arena arena = Arena.ofConfined()) {
                RingExample.Answer a = RingExample.roundTrip(arena, format, request);
                assertEquals("request 1", a.token());
                assertArrayEquals(upper(request), a.bytes(), "answer to a request of " + length + " bytes");
            }
        }
    }

    @ParameterizedTest
    @CsvSource({"SPLIT, false", "SPLIT, true", "PACKED, false", "PACKED, true"})
    void theDeviceExampleAnswersEveryRequestOnceOverVhostUser(RingFormat format, boolean indirect, @TempDir Path dir)
            throws Exception {
        Path socket = dir.resolve("upper-case.sock");
        // README:serve
        UpperCaseDevice device = new UpperCaseDevice();
        VhostUserBackendEndpoint endpoint = new VhostUserBackendEndpoint(
                () -> new VhostUserSession(device, BackendOptions.defaults()));
        Thread serving = Thread.ofPlatform().name("upper-case").start(() -> {
            try {
                endpoint.listen(socket); // serves one front-end at a time until endpoint.close()
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        // README:end
        try {
            int requests = 2000;
            drive(socket, format, indirect, requests, new SplittableRandom(42 + format.ordinal()));
            long deadline = System.nanoTime() + PATIENCE.toNanos();
            while (device.answered() != requests && System.nanoTime() - deadline < 0) {
                Thread.sleep(1); // the worker counts a pass after publishing it
            }
            assertEquals(requests, device.answered(), "requests the device counts");
        } finally {
            endpoint.close();
            serving.join(PATIENCE.toMillis());
            assertFalse(serving.isAlive(), "the endpoint stops listening once closed");
        }
    }

    /**
     * Sends {@code requests} requests, up to 48 in flight, each readable part cut into 1 to 3 elements and the
     * writable part into 1 or 2 of 1 to 4096 bytes in all; checks every answer comes back once, is the request
     * upper-cased and cut to the writable part, and that nothing else was written.
     */
    private static void drive(Path socket, RingFormat format, boolean indirect, int requests, SplittableRandom rnd)
            throws Exception {
        int slots = 48; // at most 5 descriptors each: 240 of the ring's 256 when none goes indirect
        int indirectElements = indirect ? 5 : 0;
        try (FrontendSession session = FrontendSession.connect(socket, PATIENCE)) {
            long required = VirtioFeatures.bit(VirtioFeatures.VERSION_1)
                    | (format == RingFormat.PACKED ? VirtioFeatures.bit(VirtioFeatures.RING_PACKED) : 0)
                    | (indirect ? VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC) : 0);
            session.negotiate(required | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX), required,
                    FrontendSession.PROTOCOL_FEATURES, 0, 1);
            session.attach(GuestMemory.create("readme-example",
                    FrontendSession.ringBytes(format, 256, indirectElements) + (long) slots * 8192));
            DriverRing ring = session.addRing(format, 256, indirectElements, DriverOptions.defaults(), true);
            MemorySegment buffers = session.memory().carveSegment((long) slots * 8192, 4096);
            long gpa = session.memory().gpa(buffers);
            session.start();

            DriverQueue q = ring.queue();
            byte[][] sent = new byte[slots][];
            int[] room = new int[slots];
            List<Integer> free = new ArrayList<>();
            for (int i = 0; i < slots; i++) {
                free.add(i);
            }
            ScatterGather sg = new ScatterGather(5);
            int added = 0;
            int answered = 0;
            while (answered < requests) {
                while (added < requests && !free.isEmpty()) {
                    int slot = free.remove(free.size() - 1);
                    byte[] req = request(rnd, 1 + rnd.nextInt(4096));
                    long out = slot * 8192L;
                    long in = out + 4096;
                    MemorySegment.copy(MemorySegment.ofArray(req), 0, buffers, out, req.length);
                    buffers.asSlice(in, 4096).fill((byte) 0x5a);
                    sg.clear();
                    int cut1 = rnd.nextInt(req.length + 1);
                    int cut2 = cut1 + rnd.nextInt(req.length - cut1 + 1);
                    for (int[] part : new int[][] {{0, cut1}, {cut1, cut2}, {cut2, req.length}}) {
                        if (part[1] > part[0]) {
                            sg.readable(gpa + out + part[0], part[1] - part[0]);
                        }
                    }
                    int w = 1 + rnd.nextInt(4096);
                    int w1 = w == 1 ? 1 : 1 + rnd.nextInt(w - 1);
                    sg.writable(gpa + in, w1);
                    if (w > w1) {
                        sg.writable(gpa + in + w1, w - w1);
                    }
                    q.add(sg, slot);
                    sent[slot] = req;
                    room[slot] = w;
                    added++;
                }
                q.kick();
                if (!ring.await(PATIENCE.toNanos())) {
                    fail("no answer within " + PATIENCE + ": " + answered + " of " + requests + " answered");
                }
                for (Object token; (token = q.pollUsed()) != null; answered++) {
                    int slot = (Integer) token;
                    byte[] req = sent[slot];
                    assertNotNull(req, "slot " + slot + " came back twice");
                    int n = Math.min(req.length, room[slot]);
                    assertEquals(n, q.lastUsedLength(), "used length of slot " + slot);
                    byte[] in = buffers.asSlice(slot * 8192L + 4096, 4096).toArray(JAVA_BYTE);
                    assertArrayEquals(Arrays.copyOf(upper(req), n), Arrays.copyOf(in, n), "answer in slot " + slot);
                    byte[] untouched = new byte[in.length - n];
                    Arrays.fill(untouched, (byte) 0x5a);
                    assertArrayEquals(untouched, Arrays.copyOfRange(in, n, in.length), "past the answer in slot " + slot);
                    sent[slot] = null;
                    free.add(slot);
                }
            }
            assertTrue(free.size() == slots && !q.hasUsed(), "every buffer back, nothing more");
        }
    }
}
