package io.virtio4j.devices.blk.io;

import io.virtio4j.devices.blk.InvalidBlkOptionException;
import io.virtio4j.os.IoUringUnavailableException;

/**
 * The I/O engines a queue thread may run over a {@link BlockStore} ({@code --io}). The null store always gets
 * {@link NullBlockIo}, whatever is chosen: it has nothing to read or write.
 */
public enum BlockEngine {
    /** preadv/pwritev on the queue thread ({@link SyncBlockIo}). */
    SYNC("sync"),
    /** io_uring, many operations in the kernel's hands at once ({@link UringBlockIo}). */
    IO_URING("io_uring");

    private final String label;

    BlockEngine(String label) {
        this.label = label;
    }

    /** The name on the command line. */
    public String label() {
        return label;
    }

    /**
     * The engine named {@code label} ({@code sync} or {@code io_uring}).
     *
     * @throws InvalidBlkOptionException naming {@code io}
     */
    public static BlockEngine of(String label) {
        for (BlockEngine e : values()) {
            if (e.label.equals(label)) {
                return e;
            }
        }
        throw new InvalidBlkOptionException("io", label, "must be sync or io_uring");
    }

    /**
     * A new engine of this kind over {@code store}, for one queue thread, with {@code depth} operations in flight at
     * most. A file engine comes wrapped in {@link ZeroFallbackBlockIo}: a DISCARD the file system cannot do succeeds
     * as a no-op and a WRITE_ZEROES it cannot do writes zeros, the same with every engine.
     *
     * @throws InvalidBlkOptionException naming {@code io} when this engine is not available
     */
    public BlockIo open(BlockStore store, int depth) {
        if (store.isNull()) {
            return new NullBlockIo(depth);
        }
        BlockIo raw = switch (this) {
            case SYNC -> new SyncBlockIo(store.file(), depth);
            case IO_URING -> uring(store, depth);
        };
        // Every file engine gets the same answer where the file system lacks an fallocate mode (see ZeroFallbackBlockIo).
        try {
            return new ZeroFallbackBlockIo(raw);
        } catch (RuntimeException | Error e) {
            raw.close();
            throw e;
        }
    }

    private UringBlockIo uring(BlockStore store, int depth) {
        try {
            return new UringBlockIo(store.file().fileDescriptor(), depth);
        } catch (IoUringUnavailableException e) {
            // Refused by the kernel or its policy: an option the user can change (--io sync), not a crash.
            throw new InvalidBlkOptionException("io", label, e.getMessage(), e);
        }
    }
}
