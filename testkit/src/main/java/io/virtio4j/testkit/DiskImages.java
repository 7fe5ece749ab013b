package io.virtio4j.testkit;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;

/** Disk image files for block tests. */
public final class DiskImages {
    private DiskImages() {
    }

    /** Makes {@code file} a sparse image of {@code bytes} zero bytes (created if absent) and returns it. */
    public static Path sparse(Path file, long bytes) throws IOException {
        try (RandomAccessFile r = new RandomAccessFile(file.toFile(), "rw")) {
            r.setLength(bytes);
        }
        return file;
    }
}
