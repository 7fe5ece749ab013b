package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Downcall plumbing: looks up libc symbols and captures errno. A handle from {@link #downcallErrno} takes a
 * leading {@code MemorySegment} for the captured state; {@link #errnoState()} gives the calling thread's.
 */
final class Native {
    private Native() {
    }

    static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> STATE =
            ThreadLocal.withInitial(() -> Arena.global().allocate(CAPTURE_LAYOUT));

    static MethodHandle downcall(String name, ValueLayout result, ValueLayout... args) {
        MemorySegment sym = LINKER.defaultLookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libc has no symbol " + name));
        FunctionDescriptor fd = result == null ? FunctionDescriptor.ofVoid(args) : FunctionDescriptor.of(result, args);
        return LINKER.downcallHandle(sym, fd);
    }

    static MethodHandle downcallErrno(String name, ValueLayout result, ValueLayout... args) {
        MemorySegment sym = LINKER.defaultLookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libc has no symbol " + name));
        return LINKER.downcallHandle(sym, FunctionDescriptor.of(result, args), CAPTURE_ERRNO);
    }

    static MemorySegment errnoState() {
        return STATE.get();
    }

    static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }
}
