package io.virtio4j.os;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Fails a test that ends with more or fewer entries in /proc/self/fd than it started with, listing what each
 * extra descriptor points at. Runs around every test of a class annotated {@code @ExtendWith(NoFdLeaks.class)},
 * so error paths are checked as well as the happy ones.
 */
final class NoFdLeaks implements BeforeEachCallback, AfterEachCallback {
    private static final Path FD_DIR = Path.of("/proc/self/fd");
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(NoFdLeaks.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NAMESPACE).put(context.getUniqueId(), openFds());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        @SuppressWarnings("unchecked")
        Map<Integer, String> before = (Map<Integer, String>) context.getStore(NAMESPACE).remove(context.getUniqueId());
        Map<Integer, String> after = openFds();
        Map<Integer, String> added = new TreeMap<>(after);
        added.keySet().removeAll(before.keySet());
        Map<Integer, String> removed = new TreeMap<>(before);
        removed.keySet().removeAll(after.keySet());
        assertEquals(before.size(), after.size(),
                "open file descriptors before and after the test; new: " + added + ", gone: " + removed);
    }

    /** Open descriptors of this process and what they point at. */
    static Map<Integer, String> openFds() {
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

    /** Whether {@code fd} is open in this process. */
    static boolean isOpen(int fd) {
        return Files.exists(FD_DIR.resolve(Integer.toString(fd)), java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }
}
