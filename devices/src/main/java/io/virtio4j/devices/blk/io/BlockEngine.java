package io.virtio4j.devices.blk.io;

import io.virtio4j.devices.blk.InvalidBlkOptionException;

/**
 * The I/O engines a queue thread may run over a {@link BlockStore} ({@code --io}). The null store always gets
 * {@link NullBlockIo}, whatever is chosen: it has nothing to read or write.
 */
public enum BlockEngine {
    /** preadv/pwritev on the queue thread ({@link SyncBlockIo}). */
    SYNC("sync"),
    /** io_uring, many operations in the kernel's hands at once. */
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
     * most.
     *
     * @throws InvalidBlkOptionException naming {@code io} when this engine is not available
     */
    public BlockIo open(BlockStore store, int depth) {
        if (store.isNull()) {
            return new NullBlockIo(depth);
        }
        return switch (this) {
            case SYNC -> new SyncBlockIo(store.file(), depth);
            // Plugged in when the io_uring engine (os.IoUring, UringBlockIo) is merged.
            case IO_URING -> throw new InvalidBlkOptionException("io", label, "the io_uring engine is not built yet");
        };
    }
}
