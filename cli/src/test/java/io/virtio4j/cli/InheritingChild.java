package io.virtio4j.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A child process that inherits one of this JVM's descriptors at a number of the test's choosing, as a management
 * tool starts a vhost-user back-end with {@code --fd=FDNUM}. {@link ProcessBuilder} cannot do this: its child closes
 * every descriptor above 2 before exec. posix_spawn can: a dup2 file action puts the descriptor at the chosen number
 * in the child, and clears close-on-exec there only, so this JVM's copy stays close-on-exec and no other child
 * started meanwhile gets it. glibc's posix_spawn is the same clone-and-exec the JDK uses for its own children: safe
 * in a multi-threaded JVM, unlike a fork that would run Java code in the child. No interpreter (python3, perl) is
 * needed, so the test runs wherever the JDK does. Standard input is /dev/null; standard output and error go to a
 * log file; descriptors above the chosen number are closed (posix_spawn_file_actions_addclosefrom_np, glibc 2.34+).
 */
final class InheritingChild implements AutoCloseable {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    /** sizeof(posix_spawn_file_actions_t) is 80 on 64-bit glibc; room to spare costs nothing. */
    private static final long FILE_ACTIONS_BYTES = 256;
    private static final int O_RDONLY = 0;
    private static final int O_WRONLY = 1;
    private static final int O_CREAT = 0x40;
    private static final int O_TRUNC = 0x200;
    private static final int WNOHANG = 1;
    static final int SIGKILL = 9;
    static final int SIGTERM = 15;

    private static final MethodHandle ACTIONS_INIT = handle("posix_spawn_file_actions_init", JAVA_INT, ADDRESS);
    private static final MethodHandle ACTIONS_DESTROY = handle("posix_spawn_file_actions_destroy", JAVA_INT, ADDRESS);
    private static final MethodHandle ADD_DUP2 = handle("posix_spawn_file_actions_adddup2", JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
    private static final MethodHandle ADD_OPEN = handle("posix_spawn_file_actions_addopen", JAVA_INT, ADDRESS, JAVA_INT,
            ADDRESS, JAVA_INT, JAVA_INT);
    private static final Optional<MethodHandle> ADD_CLOSEFROM = LIBC.find("posix_spawn_file_actions_addclosefrom_np")
            .map(a -> LINKER.downcallHandle(a, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT)));
    private static final MethodHandle SPAWN = handle("posix_spawn", JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle WAITPID = handle("waitpid", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle KILL = handle("kill", JAVA_INT, JAVA_INT, JAVA_INT);

    private final int pid;
    /** The wait status once reaped, or -1. */
    private int status = -1;

    private InheritingChild(int pid) {
        this.pid = pid;
    }

    /**
     * Starts {@code argv} (argv[0] an absolute path) with this process's environment and {@code fd} at number
     * {@code childFd} in the child.
     */
    static InheritingChild start(List<String> argv, int fd, int childFd, Path log) throws Throwable {
        if (fd == childFd || childFd < 3) {
            // dup2 onto itself would leave close-on-exec set; 0..2 are the child's standard streams
            throw new IllegalArgumentException("choose a child descriptor above 2 other than " + fd + ", got " + childFd);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment actions = arena.allocate(FILE_ACTIONS_BYTES, 8);
            check("posix_spawn_file_actions_init", (int) ACTIONS_INIT.invokeExact(actions));
            try {
                check("adddup2", (int) ADD_DUP2.invokeExact(actions, fd, childFd));
                check("addopen stdin", (int) ADD_OPEN.invokeExact(actions, 0, arena.allocateFrom("/dev/null"), O_RDONLY, 0));
                check("addopen stdout", (int) ADD_OPEN.invokeExact(actions, 1, arena.allocateFrom(log.toString()),
                        O_WRONLY | O_CREAT | O_TRUNC, 0644));
                check("adddup2 stderr", (int) ADD_DUP2.invokeExact(actions, 1, 2));
                if (ADD_CLOSEFROM.isPresent()) {
                    check("addclosefrom_np", (int) ADD_CLOSEFROM.get().invokeExact(actions, childFd + 1));
                }
                MemorySegment pid = arena.allocate(JAVA_INT);
                check("posix_spawn " + argv.getFirst(), (int) SPAWN.invokeExact(pid, arena.allocateFrom(argv.getFirst()),
                        actions, MemorySegment.NULL, strings(arena, argv), strings(arena, environment())));
                return new InheritingChild(pid.get(JAVA_INT, 0));
            } finally {
                int ignored = (int) ACTIONS_DESTROY.invokeExact(actions);
            }
        }
    }

    long pid() {
        return pid;
    }

    /** Sends {@code signal} unless the child has been reaped already (its pid may belong to another process by then). */
    void signal(int signal) throws Throwable {
        if (status < 0) {
            int ignored = (int) KILL.invokeExact(pid, signal);
        }
    }

    /**
     * Waits at most {@code millis} for the child to end; returns its exit code (128 + the signal when a signal ended
     * it), or -1 when it still runs.
     */
    int waitFor(long millis) throws Throwable {
        long deadline = System.nanoTime() + millis * 1_000_000;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wstatus = arena.allocate(JAVA_INT);
            while (status < 0) {
                int r = (int) WAITPID.invokeExact(pid, wstatus, WNOHANG);
                if (r == pid) {
                    status = wstatus.get(JAVA_INT, 0);
                } else if (System.nanoTime() - deadline > 0) {
                    return -1;
                } else {
                    Thread.sleep(20); // a bound on how long to wait, not an assertion on how long it took
                }
            }
        }
        int signal = status & 0x7f;
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal;
    }

    /** Kills the child if it still runs and reaps it: no test leaves a process or a zombie behind. */
    @Override
    public void close() throws Exception {
        try {
            if (waitFor(0) < 0) {
                signal(SIGKILL);
                waitFor(60_000);
            }
        } catch (Exception | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("reaping child " + pid, t);
        }
    }

    private static List<String> environment() {
        List<String> env = new ArrayList<>();
        for (Map.Entry<String, String> e : System.getenv().entrySet()) {
            env.add(e.getKey() + "=" + e.getValue());
        }
        return env;
    }

    /** A NULL-terminated char *[] of {@code values}. */
    private static MemorySegment strings(Arena arena, List<String> values) {
        MemorySegment array = arena.allocate(ADDRESS, values.size() + 1L);
        for (int i = 0; i < values.size(); i++) {
            array.setAtIndex(ADDRESS, i, arena.allocateFrom(values.get(i)));
        }
        array.setAtIndex(ADDRESS, values.size(), MemorySegment.NULL);
        return array;
    }

    /** posix_spawn and its file actions return the error number instead of setting errno. */
    private static void check(String what, int error) {
        if (error != 0) {
            throw new IllegalStateException(what + " failed: error " + error);
        }
    }

    private static MethodHandle handle(String name, MemoryLayout result, MemoryLayout... args) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(() -> new IllegalStateException("no " + name + " in libc")),
                FunctionDescriptor.of(result, args));
    }
}
