package io.virtio4j.testkit;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Opens a file and hands over the raw descriptor, for tests of code that takes one (the JDK's file classes never
 * show theirs). testkit may import no project module, so the caller wraps the number in the OS module's owning type
 * ({@code FileDescriptor.adopt}), which closes it.
 */
public final class OpenFile {
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN = LINKER.downcallHandle(LINKER.defaultLookup().find("open").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), Linker.Option.firstVariadicArg(2),
            Linker.Option.captureCallState("errno"));

    private OpenFile() {
    }

    /** Opens an existing {@code path} read-write, close-on-exec; returns the descriptor number, the caller's to close. */
    public static int readWrite(Path path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(path.toString()), O_RDWR | O_CLOEXEC, 0);
            if (fd < 0) {
                throw new IllegalStateException("open(" + path + ") failed: errno " + (int) ERRNO.get(state, 0L));
            }
            return fd;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("open(" + path + ") downcall failed", t);
        }
    }
}
