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
 *   <li>pipes: only the JDK's process launcher makes them here (the library makes none), for the standard
 *       streams of a child process, and the JDK closes them itself when the child exits, on its reaper thread,
 *       at a moment no test controls. A child of the test runner's is enough to make one appear in the middle
 *       of any test: Surefire 3.5.4's forked booter ran {@code ps} every few seconds to see whether Maven was
 *       still alive, and that was the {@code pipe:[...]} of an order-dependent failure in
 *       {@code CrossProcessMappingTest} (Surefire 3.5.5 asks {@code ProcessHandle} instead). A pipe cannot
 *       outlive its child, so what a test must check is that its children end, not their pipes;</li>
 *   <li>jar files and the runtime image, which class loading opens lazily the first time a class is needed;</li>
 *   <li>{@code /dev/random} and {@code /dev/urandom}, which SecureRandom opens once, lazily.</li>
 * </ul>
 * Everything else (memfds, eventfds, epoll instances, sockets, tap devices, mapped or plain files) is compared
 * by identity (descriptor number and target), so a leak of ours fails even when some other descriptor closed
 * meanwhile, and so does closing a descriptor the test did not open.
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
     * Waits until exactly the descriptors of {@code before} are open again; fails listing the new and vanished
     * ones when they do not come back within the watchdog.
     */
    public static void assertBackTo(Map<Integer, String> before) {
        assertBackTo(before, 0);
    }

    /**
     * Like {@link #assertBackTo(Map)} with exactly {@code extra} new descriptors besides (e.g. a listening socket
     * the test opened and keeps).
     */
    public static void assertBackTo(Map<Integer, String> before, int extra) {
        assertBackTo(before, extra, WATCHDOG_NANOS);
    }

    static void assertBackTo(Map<Integer, String> before, int extra, long watchdogNanos) {
        long deadline = System.nanoTime() + watchdogNanos;
        Map<Integer, String> now = snapshot();
        while (!isBack(before, extra, now) && System.nanoTime() - deadline < 0) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            now = snapshot();
        }
        if (!isBack(before, extra, now)) {
            fail("open file descriptors: " + before.size() + " before (+" + extra + " allowed), " + now.size()
                    + " after; new: " + added(before, now) + ", gone: " + added(now, before));
        }
    }

    /** Whether every descriptor of {@code before} is still the same one in {@code now}, with {@code extra} more. */
    private static boolean isBack(Map<Integer, String> before, int extra, Map<Integer, String> now) {
        return added(now, before).isEmpty() && now.size() == before.size() + extra;
    }

    /** The entries of {@code after} that {@code before} does not have (a reused number with a new target counts). */
    private static Map<Integer, String> added(Map<Integer, String> before, Map<Integer, String> after) {
        Map<Integer, String> added = new TreeMap<>(after);
        added.entrySet().removeAll(before.entrySet());
        return added;
    }
}
