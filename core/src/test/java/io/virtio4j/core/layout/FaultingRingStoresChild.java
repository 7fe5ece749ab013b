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

    public static void main(String[] args) throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle memfd = linker.downcallHandle(linker.defaultLookup().find("memfd_create").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        MethodHandle ftruncate = linker.downcallHandle(linker.defaultLookup().find("ftruncate").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
        MethodHandle mmap = linker.downcallHandle(linker.defaultLookup().find("mmap").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
        int fd = (int) memfd.invokeExact(Arena.global().allocateFrom("faulting-rings"), 1 /* MFD_CLOEXEC */);
        check((int) ftruncate.invokeExact(fd, BYTES), "ftruncate");
        long address = (long) mmap.invokeExact(MemorySegment.NULL, BYTES, 3 /* RW */, 1 /* MAP_SHARED */, fd, 0L);
        if (address < 0) {
            throw new IllegalStateException("mmap failed");
        }
        MemorySegment mem = MemorySegment.ofAddress(address).reinterpret(BYTES);
        int qsz = 8;
        SplitRingAreas split = SplitRingAreas.carve(mem, qsz);
        PackedRingAreas packed = PackedRingAreas.carve(mem.asSlice(32 * 1024), qsz);
        UsedRing used = new UsedRing(split.usedRing(), qsz);
        AvailRing avail = new AvailRing(split.availRing(), qsz);
        check((int) ftruncate.invokeExact(fd, 0L), "ftruncate to 0");
        store("used.idx", () -> used.idxRelease(1));
        store("used.flags", () -> used.flagsRelease(1));
        store("avail_event", () -> used.availEventRelease(1));
        store("avail.idx", () -> avail.idxRelease(1));
        store("avail.flags", () -> avail.flagsRelease(1));
        store("packed flags", () -> PackedDescriptors.flagsRelease(packed.descRing(), 0, 0x80));
        System.out.println("done");
    }

    private static void store(String what, Runnable store) {
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
