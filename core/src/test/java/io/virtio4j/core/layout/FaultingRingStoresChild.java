package io.virtio4j.core.layout;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Child JVM of {@link RingStoresOnFaultingMemoryTest}: lays rings over a memfd mapping, truncates the memfd (what a
 * hostile front-end does to its guest memory), then does every release store of the ring flyweights on it. Each
 * must raise the JVM's InternalError, not crash it; prints one line per store that did, and "done". Plain FFM (core
 * has no os module): memfd_create, ftruncate, mmap.
 */
public final class FaultingRingStoresChild {
    private FaultingRingStoresChild() {
    }

    private static final long BYTES = 64 * 1024;

    /** A memfd of {@code bytes} mapped shared; {@link #truncate} shrinks the file to 0 under the mapping. */
    private record TruncatableMapping(MemorySegment memory, int fd) {
        static TruncatableMapping map(long bytes) throws Throwable {
            int fd = (int) MEMFD.invokeExact(Arena.global().allocateFrom("faulting-stores"), 1 /* MFD_CLOEXEC */);
            check((int) FTRUNCATE.invokeExact(fd, bytes), "ftruncate");
            long address = (long) MMAP.invokeExact(MemorySegment.NULL, bytes, 3 /* RW */, 1 /* MAP_SHARED */, fd, 0L);
            if (address < 0) {
                throw new IllegalStateException("mmap failed");
            }
            return new TruncatableMapping(MemorySegment.ofAddress(address).reinterpret(bytes), fd);
        }

        void truncate() throws Throwable {
            check((int) FTRUNCATE.invokeExact(fd, 0L), "ftruncate to 0");
        }
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MEMFD = LINKER.downcallHandle(LINKER.defaultLookup().find("memfd_create")
            .orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle FTRUNCATE = LINKER.downcallHandle(LINKER.defaultLookup().find("ftruncate")
            .orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MMAP = LINKER.downcallHandle(LINKER.defaultLookup().find("mmap").orElseThrow(),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));

    public static void main(String[] args) throws Throwable {
        TruncatableMapping mapping = TruncatableMapping.map(BYTES);
        MemorySegment mem = mapping.memory();
        int qsz = 8;
        SplitRingAreas split = SplitRingAreas.carve(mem, qsz);
        PackedRingAreas packed = PackedRingAreas.carve(mem.asSlice(32 * 1024), qsz);
        UsedRing used = new UsedRing(split.usedRing(), qsz);
        AvailRing avail = new AvailRing(split.availRing(), qsz);
        java.util.Map<String, Runnable> inflight = io.virtio4j.core.device.FaultingInflightStores.prepare(
                mem.asSlice(48 * 1024, 8 * 1024));
        mapping.truncate();
        store("used.idx", () -> used.idxRelease(1));
        store("used.flags", () -> used.flagsRelease(1));
        store("avail_event", () -> used.availEventRelease(1));
        store("avail.idx", () -> avail.idxRelease(1));
        store("avail.flags", () -> avail.flagsRelease(1));
        store("packed flags", () -> PackedDescriptors.flagsRelease(packed.descRing(), 0, 0x80));
        inflight.forEach(FaultingRingStoresChild::store);
        System.out.println("done");
    }

    /** Runs {@code store}, printing "what: " and the InternalError's message it raised, or "no fault". */
    public static void store(String what, Runnable store) {
        try {
            store.run();
            System.out.println(what + ": no fault");
        } catch (InternalError e) {
            System.out.println(what + ": " + e.getMessage());
        }
    }

    private static void check(int result, String what) {
        if (result != 0) {
            throw new IllegalStateException(what + " failed");
        }
    }
}
