package io.virtio4j.devices.net;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * The open file descriptors of this JVM (/proc/self/fd), after os's NoFdLeaks. Front-end and back-end run in
 * the same process here, so a descriptor either side forgets to close shows up. The back-end releases a
 * connection on its own thread after the front-end closes, so {@link #assertBackTo} waits (with a watchdog)
 * for the count to come back before it compares.
 */
final class OpenFds {
    private static final Path FD_DIR = Path.of("/proc/self/fd");
    private static final long WATCHDOG_NANOS = 20_000_000_000L;

    static {
        // The JVM opens /dev/random and /dev/urandom once, lazily, for SecureRandom (temporary file names):
        // have that happen before any snapshot.
        new java.security.SecureRandom().nextBytes(new byte[8]);
        try {
            Files.delete(Files.createTempDirectory("v4j-warmup"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private OpenFds() {
    }

    /** Open descriptors and what they point at. */
    static Map<Integer, String> snapshot() {
        Map<Integer, String> fds = new TreeMap<>();
        try (Stream<Path> entries = Files.list(FD_DIR)) {
            for (Path entry : (Iterable<Path>) entries::iterator) {
                try {
                    String target = Files.readSymbolicLink(entry).toString();
                    if (!target.matches("/proc/\\d+/fd")) { // the listing's own directory descriptor
                        fds.put(Integer.parseInt(entry.getFileName().toString()), target);
                    }
                } catch (IOException closedMeanwhile) {
                    // closed by another thread between listing and looking: not open after all
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list " + FD_DIR, e);
        }
        return fds;
    }

    /**
     * Waits until as many descriptors are open as in {@code before}, then checks that; fails listing the new
     * and vanished ones when the count does not come back within the watchdog.
     */
    static void assertBackTo(Map<Integer, String> before) {
        assertBackTo(before, 0);
    }

    /** Like {@link #assertBackTo(Map)} with {@code extra} more descriptors allowed (e.g. a listening socket). */
    static void assertBackTo(Map<Integer, String> before, int extra) {
        long deadline = System.nanoTime() + WATCHDOG_NANOS;
        Map<Integer, String> now = snapshot();
        while (now.size() != before.size() + extra && System.nanoTime() - deadline < 0) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            now = snapshot();
        }
        if (now.size() != before.size() + extra) {
            Map<Integer, String> added = new TreeMap<>(now);
            added.keySet().removeAll(before.keySet());
            Map<Integer, String> removed = new TreeMap<>(before);
            removed.keySet().removeAll(now.keySet());
            fail("open file descriptors: " + before.size() + " before (+" + extra + " allowed), " + now.size()
                    + " after; new: " + added + ", gone: " + removed);
        }
    }
}
