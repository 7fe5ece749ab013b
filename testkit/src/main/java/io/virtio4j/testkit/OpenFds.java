package io.virtio4j.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * The open file descriptors of this JVM that our code could own, from /proc/self/fd: the one descriptor-leak
 * check of every test tree.
 *
 * <p>Exact about ours, blind to the runtime's. The JVM and the test runner open descriptors on threads of their
 * own at moments no test controls, and those must not decide a test's result:
 * <ul>
 *   <li>pipes: the JDK's process launcher makes them for every child process, and Surefire's forked booter
 *       (3.5.4 and older) runs {@code ps} every few seconds from a timer thread to see whether Maven is still
 *       alive, so a pipe can appear in the middle of any test (that was the {@code pipe:[...]} an order-dependent
 *       failure in {@code CrossProcessMappingTest} reported). Nothing in virtio4j creates a pipe: if that ever
 *       changes, this filter must learn to tell those apart;</li>
 *   <li>jar files and the runtime image, which class loading opens lazily the first time a class is needed;</li>
 *   <li>{@code /dev/random} and {@code /dev/urandom}, which SecureRandom opens once, lazily.</li>
 * </ul>
 * Everything else (memfds, eventfds, epoll instances, sockets, tap devices, mapped or plain files) is counted,
 * so a leak of ours still fails.
 *
 * <p>A back-end may release a connection on its own thread after the front-end closes, so
 * {@link #assertBackTo} waits (with a watchdog) for the count to come back before it compares.
 */
public final class OpenFds {
    private static final Path FD_DIR = Path.of("/proc/self/fd");
    private static final long WATCHDOG_NANOS = 20_000_000_000L;

    private OpenFds() {
    }

    /** Open descriptors that could be ours, and what each points at. */
    public static Map<Integer, String> snapshot() {
        Map<Integer, String> fds = new TreeMap<>();
        try (Stream<Path> entries = Files.list(FD_DIR)) {
            for (Path entry : (Iterable<Path>) entries::iterator) {
                try {
                    String target = Files.readSymbolicLink(entry).toString();
                    if (!ownedByRuntime(target)) {
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

    /** Whether a descriptor pointing at {@code target} belongs to the JVM or the test runner (see the class comment). */
    static boolean ownedByRuntime(String target) {
        return target.startsWith("pipe:")
                || target.endsWith(".jar")
                || target.endsWith("/lib/modules")
                || target.equals("/dev/random")
                || target.equals("/dev/urandom")
                || target.matches("/proc/\\d+/fd"); // the listing's own directory descriptor
    }

    /** Whether {@code fd} is open in this process (whoever owns it). */
    public static boolean isOpen(int fd) {
        return Files.exists(FD_DIR.resolve(Integer.toString(fd)), LinkOption.NOFOLLOW_LINKS);
    }

    /**
     * Waits until as many descriptors are open as in {@code before}, then checks that; fails listing the new
     * and vanished ones when the count does not come back within the watchdog.
     */
    public static void assertBackTo(Map<Integer, String> before) {
        assertBackTo(before, 0);
    }

    /** Like {@link #assertBackTo(Map)} with {@code extra} more descriptors allowed (e.g. a listening socket). */
    public static void assertBackTo(Map<Integer, String> before, int extra) {
        assertBackTo(before, extra, WATCHDOG_NANOS);
    }

    static void assertBackTo(Map<Integer, String> before, int extra, long watchdogNanos) {
        long deadline = System.nanoTime() + watchdogNanos;
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
