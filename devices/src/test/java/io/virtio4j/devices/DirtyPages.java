package io.virtio4j.devices;

import io.virtio4j.core.memory.DirtyLog;

import java.lang.foreign.Arena;
import java.util.BitSet;

/** What a device's dirty-logging tests compare: the pages a {@link DirtyLog} has marked. */
public final class DirtyPages {
    private DirtyPages() {
    }

    /** A zeroed log of {@code bytes} in {@code arena}, its words aligned as the atomic OR wants them. */
    public static DirtyLog log(Arena arena, long bytes) {
        return new DirtyLog(arena.allocate((bytes + 7) & ~7L, 8), 0, bytes);
    }

    /** The pages marked in {@code log}, one bit per page. */
    public static BitSet marked(DirtyLog log) {
        BitSet b = new BitSet();
        for (long p = 0; p < log.pages(); p++) {
            if (log.isDirty(p)) {
                b.set((int) p);
            }
        }
        return b;
    }

    /** Sets in {@code set} the pages [{@code gpa}, +{@code len}) touches: what a device writing there must mark. */
    public static void pages(BitSet set, long gpa, long len) {
        for (long p = gpa >>> DirtyLog.PAGE_SHIFT; p <= (gpa + len - 1) >>> DirtyLog.PAGE_SHIFT; p++) {
            set.set(Math.toIntExact(p));
        }
    }
}
