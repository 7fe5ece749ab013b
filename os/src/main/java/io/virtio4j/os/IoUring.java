package io.virtio4j.os;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * One io_uring instance, through its three system calls (no liburing): a submission queue (SQ) of 64-byte entries
 * this side fills and the kernel consumes, and a completion queue (CQ) of 16-byte entries the kernel fills and this
 * side consumes, both in memory shared with the kernel.
 *
 * <p>Use: {@code prepare*} entries (each tagged with a 64-bit {@code userData} that its completion carries back),
 * {@link #submit()} them, {@link #reap} completions. One thread at a time: nothing here is synchronised. Preparing,
 * submitting and reaping allocate nothing: a failing {@code io_uring_enter} is made again with errno captured only
 * to learn why (it consumed nothing when it failed).
 *
 * <p>Ordering. The kernel's side of each index is an acquire load or a release store (smp_load_acquire /
 * smp_store_release in io_uring); this side pairs each with the opposite one, through a VarHandle on the mapped int:
 * <ul>
 *   <li>SQ tail: a release store, after the entry's plain stores. The kernel loads the tail with acquire and then
 *       reads the entries before it; without the release (the JIT and a weakly ordered CPU may both move plain stores
 *       after a later store) the kernel could see the new tail before the entry and run a half-written one: a
 *       stale opcode, file descriptor or buffer address.</li>
 *   <li>SQ head: an acquire load, before an entry slot is written again. The kernel stores the head with release
 *       once it has copied the entries before it; the acquire keeps this side's rewrite of a slot after the
 *       kernel's read of its last contents.</li>
 *   <li>CQ tail: an acquire load, before the entries up to it are read. The kernel writes an entry, then stores the
 *       tail with release; without the acquire this side could read a slot's previous contents (a stale result and
 *       user data) behind the new tail.</li>
 *   <li>CQ head: a release store, after the entries before it have been read. The kernel loads the head with
 *       acquire before it writes a slot again; without the release this side's reads of an entry could be
 *       satisfied after the kernel had already overwritten it with a newer completion.</li>
 *   <li>SQ flags (CQ overflow): an acquire load; the kernel sets the bit atomically and clears it while it
 *       flushes, and a stale view only delays a flush to the next {@link #reap}.</li>
 * </ul>
 * {@code io_uring_enter} itself is a system call: the kernel sees every store made before it.
 *
 * <p>A CQ that fills up does not lose completions (IORING_FEAT_NODROP, required): the kernel keeps them aside and
 * sets IORING_SQ_CQ_OVERFLOW, and {@link #reap} moves them into the ring (an enter with GETEVENTS) and drains them
 * too. Until then the kernel may refuse submissions with EBUSY, which {@link #submit()} returns as {@code -EBUSY}.
 */
public final class IoUring implements AutoCloseable {
    /** Does nothing; completes with 0. */
    public static final int OP_NOP = 0;
    /** preadv: {@code count} iovecs, at a file offset. */
    public static final int OP_READV = 1;
    /** pwritev: {@code count} iovecs, at a file offset. */
    public static final int OP_WRITEV = 2;
    /** fsync, or fdatasync with {@link #FSYNC_DATASYNC}. */
    public static final int OP_FSYNC = 3;
    /** fallocate(fd, mode, offset, length); the modes are {@link BlockFile}'s {@code FALLOC_FL_*}. */
    public static final int OP_FALLOCATE = 17;
    /** FSYNC flag: fdatasync (data and the metadata needed to read it back), not fsync. */
    public static final int FSYNC_DATASYNC = 1;
    /**
     * A READV/WRITEV flag (RWF_NOWAIT): complete at once with EAGAIN instead of waiting. Without it io_uring parks a
     * read of an empty socket or tap on the descriptor's wait queue (an armed poll) and completes it whenever data
     * comes, even on an O_NONBLOCK descriptor; with it the read is a plain non-blocking read made in the submitting
     * system call.
     */
    public static final int RWF_NOWAIT = 0x8;
    /** The kernel's IORING_MAX_ENTRIES: the largest submission queue. */
    public static final int MAX_ENTRIES = 32768;

    // System call numbers: the same on x86-64 and aarch64 (io_uring came after the tables were unified).
    private static final long SYS_IO_URING_SETUP = 425;
    private static final long SYS_IO_URING_ENTER = 426;
    private static final long SYS_IO_URING_REGISTER = 427;

    private static final long IORING_OFF_SQ_RING = 0;
    private static final long IORING_OFF_SQES = 0x10000000L;
    private static final int IORING_FEAT_SINGLE_MMAP = 1;
    private static final int IORING_FEAT_NODROP = 1 << 1;
    private static final int IORING_ENTER_GETEVENTS = 1;
    private static final int IORING_SQ_CQ_OVERFLOW = 1 << 1;
    private static final int IORING_REGISTER_EVENTFD = 4;

    // struct io_uring_params (120 bytes) and its io_sqring_offsets / io_cqring_offsets (40 bytes each)
    private static final long PARAMS_BYTES = 120;
    private static final long P_SQ_ENTRIES = 0;
    private static final long P_CQ_ENTRIES = 4;
    private static final long P_FEATURES = 20;
    private static final long P_SQ_OFF = 40;
    private static final long P_CQ_OFF = 80;
    private static final long OFF_HEAD = 0;
    private static final long OFF_TAIL = 4;
    private static final long OFF_RING_MASK = 8;
    private static final long SQ_OFF_FLAGS = 16;
    private static final long SQ_OFF_ARRAY = 24;
    private static final long CQ_OFF_CQES = 20;

    // struct io_uring_sqe (64 bytes)
    private static final long SQE_BYTES = 64;
    private static final long SQE_OPCODE = 0;
    private static final long SQE_FLAGS = 1;
    private static final long SQE_IOPRIO = 2;
    private static final long SQE_FD = 4;
    private static final long SQE_OFF = 8;
    private static final long SQE_ADDR = 16;
    private static final long SQE_LEN = 24;
    private static final long SQE_OP_FLAGS = 28;
    private static final long SQE_USER_DATA = 32;
    private static final long SQE_TAIL_WORDS = 40; // buf_index, personality, splice_fd_in, addr3, pad: all zero here
    // struct io_uring_cqe (16 bytes)
    private static final long CQE_BYTES = 16;
    private static final long CQE_RES = 8;
    private static final long CQE_FLAGS = 12;

    private static final VarHandle INT = JAVA_INT.varHandle();

    // long syscall(long number, ...): every argument is passed as a long, the width syscall() reads each with, so
    // no upper half of a register is left undefined (the kernel truncates to the declared int types itself).
    private static final Linker.Option AFTER_NUMBER = Linker.Option.firstVariadicArg(1);
    private static final MethodHandle SETUP =
            Native.downcallErrno("syscall", AFTER_NUMBER, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS);
    private static final MethodHandle REGISTER =
            Native.downcallErrno("syscall", AFTER_NUMBER, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG);
    private static final MethodHandle ENTER = Native.downcall("syscall", AFTER_NUMBER, JAVA_LONG,
            JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
    private static final MethodHandle ENTER_ERRNO = Native.downcallErrno("syscall", AFTER_NUMBER, JAVA_LONG,
            JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);

    private final Arena arena;
    private final FileDescriptor ringFd;
    private final int fd;
    private final MemorySegment rings;
    private final MemorySegment sqes;
    private final int sqEntries;
    private final int cqEntries;
    private final int sqMask;
    private final int cqMask;
    private final long sqHead;
    private final long sqTail;
    private final long sqFlags;
    private final long cqHead;
    private final long cqTail;
    private final long cqes;
    private final String enterName;
    private final Native.Call enterCall;

    /** Entries prepared so far (this side owns the SQ tail: only it writes the shared one). */
    private int sqeTail;
    /** The kernel's SQ head as last loaded: slots before it are free again. */
    private int sqHeadSeen;
    /** Completions consumed so far (this side owns the CQ head). */
    private int cqHeadLocal;
    // The arguments of the enter being retried with errno captured (a prebuilt call reads them: no allocation).
    private long enterToSubmit;
    private long enterMinComplete;
    private long enterFlags;
    private boolean closed;

    /** Receives a completion: the {@code userData} it was prepared with, its result (a negative errno on failure). */
    @FunctionalInterface
    public interface CompletionHandler {
        void completed(long userData, int result, int flags);
    }

    private IoUring(Arena arena, FileDescriptor ringFd, MemorySegment params) {
        this.arena = arena;
        this.ringFd = ringFd;
        this.fd = ringFd.fd();
        this.sqEntries = params.get(JAVA_INT, P_SQ_ENTRIES);
        this.cqEntries = params.get(JAVA_INT, P_CQ_ENTRIES);
        int features = params.get(JAVA_INT, P_FEATURES);
        if ((features & (IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP)) != (IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP)) {
            throw new IoUringUnavailableException("io_uring of kernel " + osRelease() + " lacks IORING_FEAT_SINGLE_MMAP"
                    + " or IORING_FEAT_NODROP (features 0x" + Integer.toHexString(features) + "): it needs Linux 5.5 or"
                    + " later; choose the synchronous engine", Errno.ENOSYS);
        }
        long sqArray = params.get(JAVA_INT, P_SQ_OFF + SQ_OFF_ARRAY) & 0xffff_ffffL;
        this.cqes = params.get(JAVA_INT, P_CQ_OFF + CQ_OFF_CQES) & 0xffff_ffffL;
        // One mapping holds both rings (IORING_FEAT_SINGLE_MMAP): as large as the larger of the two.
        long ringBytes = Math.max(sqArray + 4L * sqEntries, cqes + CQE_BYTES * cqEntries);
        this.rings = Mmap.mapShared(ringFd, IORING_OFF_SQ_RING, ringBytes, arena);
        this.sqes = Mmap.mapShared(ringFd, IORING_OFF_SQES, SQE_BYTES * sqEntries, arena);
        this.sqHead = params.get(JAVA_INT, P_SQ_OFF + OFF_HEAD);
        this.sqTail = params.get(JAVA_INT, P_SQ_OFF + OFF_TAIL);
        this.sqFlags = params.get(JAVA_INT, P_SQ_OFF + SQ_OFF_FLAGS);
        this.sqMask = rings.get(JAVA_INT, params.get(JAVA_INT, P_SQ_OFF + OFF_RING_MASK));
        this.cqHead = params.get(JAVA_INT, P_CQ_OFF + OFF_HEAD);
        this.cqTail = params.get(JAVA_INT, P_CQ_OFF + OFF_TAIL);
        this.cqMask = rings.get(JAVA_INT, params.get(JAVA_INT, P_CQ_OFF + OFF_RING_MASK));
        // The SQ array maps ring positions to entry slots: identity, set once. Plain stores: the first tail release
        // (and the system call after it) publishes them before the kernel reads any.
        for (int i = 0; i < sqEntries; i++) {
            rings.set(JAVA_INT, sqArray + 4L * i, i);
        }
        this.sqeTail = (int) INT.getAcquire(rings, sqTail);
        this.sqHeadSeen = (int) INT.getAcquire(rings, sqHead);
        this.cqHeadLocal = (int) INT.getAcquire(rings, cqHead);
        this.enterName = "io_uring_enter(fd " + fd + ")";
        this.enterCall = st -> (long) ENTER_ERRNO.invokeExact(st, SYS_IO_URING_ENTER, (long) fd, enterToSubmit,
                enterMinComplete, enterFlags, 0L, 0L);
    }

    /**
     * Sets up an io_uring of {@code entries} submission entries (rounded up to a power of two by the kernel) and
     * twice as many completion entries.
     *
     * @throws IoUringUnavailableException when the kernel has no io_uring or this process may not use it
     * @throws LinuxException for another failure (ENOMEM, EMFILE ...)
     */
    public static IoUring create(int entries) {
        if (entries < 1 || entries > MAX_ENTRIES) {
            throw new IllegalArgumentException("an io_uring has 1 to " + MAX_ENTRIES + " entries, not " + entries);
        }
        Arena arena = Arena.ofShared();
        FileDescriptor ringFd = null;
        try {
            MemorySegment params = arena.allocate(PARAMS_BYTES, 8); // zeroed: no setup flags
            long n = Native.callOrErrno("io_uring_setup",
                    st -> (long) SETUP.invokeExact(st, SYS_IO_URING_SETUP, (long) entries, params));
            if (n == -Errno.ENOSYS || n == -Errno.EPERM) {
                throw unavailable((int) -n);
            }
            if (n < 0) {
                throw new LinuxException("io_uring_setup(" + entries + " entries)", (int) -n);
            }
            ringFd = FileDescriptor.adopt((int) n);
            return new IoUring(arena, ringFd, params);
        } catch (RuntimeException | Error e) {
            if (ringFd != null) {
                ringFd.close();
            }
            arena.close();
            throw e;
        }
    }

    /** What io_uring_setup failing with {@code errno} (ENOSYS or EPERM) means here, for the user. */
    static IoUringUnavailableException unavailable(int errno) {
        String why = errno == Errno.ENOSYS ? "this kernel has no io_uring"
                : "io_uring is refused to this process (kernel.io_uring_disabled = " + sysctl("io_uring_disabled")
                        + "; 1 allows only the group kernel.io_uring_group, 2 nobody; or a seccomp filter forbids it)";
        return new IoUringUnavailableException("io_uring_setup failed with " + Errno.name(errno) + ": " + why
                + " (kernel " + osRelease() + "); choose the synchronous engine", errno);
    }

    private static String osRelease() {
        return sysctl("osrelease");
    }

    private static String sysctl(String name) {
        try {
            return Files.readString(Path.of("/proc/sys/kernel", name)).strip();
        } catch (IOException e) {
            return "unknown";
        }
    }

    /** Submission entries (a power of two, at least what {@link #create} was asked for). */
    public int sqEntries() {
        return sqEntries;
    }

    /** Completion entries. */
    public int cqEntries() {
        return cqEntries;
    }

    /** The ring's own descriptor (for messages and leak checks). */
    public FileDescriptor fileDescriptor() {
        return ringFd;
    }

    /** Entries prepared and not yet consumed by the kernel (consumed by the next {@link #submit()}). */
    public int sqPending() {
        return sqeTail - (int) INT.getAcquire(rings, sqHead);
    }

    /** Free submission slots: how many more entries can be prepared now. */
    public int sqSpace() {
        return sqEntries - sqPending();
    }

    /** Completions waiting to be reaped. */
    public int cqReady() {
        return (int) INT.getAcquire(rings, cqTail) - cqHeadLocal;
    }

    /**
     * Whether completions overflowed the CQ and wait in the kernel (IORING_SQ_CQ_OVERFLOW); {@link #reap} moves them
     * in.
     */
    public boolean cqOverflowed() {
        return ((int) INT.getAcquire(rings, sqFlags) & IORING_SQ_CQ_OVERFLOW) != 0;
    }

    /**
     * A NOP: completes with 0.
     *
     * @return false when the submission queue is full (nothing prepared)
     */
    public boolean prepareNop(long userData) {
        return prepare(OP_NOP, -1, 0, 0, 0, 0, userData);
    }

    /**
     * A preadv of entries {@code index} to {@code index + count - 1} of {@code iov} at byte {@code offset} of
     * {@code fd}. The iovecs and the memory they point at must stay valid until the completion is reaped.
     *
     * @return false when the submission queue is full (nothing prepared)
     */
    public boolean prepareReadv(int fd, long offset, IoVecs iov, int index, int count, long userData) {
        return prepareVector(OP_READV, fd, offset, iov, index, count, 0, userData);
    }

    /**
     * A preadv as {@link #prepareReadv(int, long, IoVecs, int, int, long)}, with {@code rwFlags} (0 or
     * {@link #RWF_NOWAIT}).
     */
    public boolean prepareReadv(int fd, long offset, IoVecs iov, int index, int count, int rwFlags, long userData) {
        if ((rwFlags & ~RWF_NOWAIT) != 0) {
            throw new IllegalArgumentException("unsupported read flags 0x" + Integer.toHexString(rwFlags));
        }
        return prepareVector(OP_READV, fd, offset, iov, index, count, rwFlags, userData);
    }

    /** A pwritev; as {@link #prepareReadv}. */
    public boolean prepareWritev(int fd, long offset, IoVecs iov, int index, int count, long userData) {
        return prepareVector(OP_WRITEV, fd, offset, iov, index, count, 0, userData);
    }

    /** An fsync of the whole file, or an fdatasync with {@link #FSYNC_DATASYNC}. */
    public boolean prepareFsync(int fd, int fsyncFlags, long userData) {
        if ((fsyncFlags & ~FSYNC_DATASYNC) != 0) {
            throw new IllegalArgumentException("unknown fsync flags 0x" + Integer.toHexString(fsyncFlags));
        }
        return prepare(OP_FSYNC, fd, 0, 0, 0, fsyncFlags, userData);
    }

    /**
     * fallocate({@code fd}, {@code mode}, {@code offset}, {@code length}). The kernel's layout for it: the length
     * travels in {@code addr}, the mode in {@code len}, the offset in {@code off}.
     */
    public boolean prepareFallocate(int fd, int mode, long offset, long length, long userData) {
        if (offset < 0 || length < 0 || offset > Long.MAX_VALUE - length) {
            throw new IllegalArgumentException("fallocate range: " + length + " bytes at " + offset);
        }
        return prepare(OP_FALLOCATE, fd, offset, length, mode, 0, userData);
    }

    private boolean prepareVector(int opcode, int fd, long offset, IoVecs iov, int index, int count, int rwFlags,
                                  long userData) {
        if (offset < 0) {
            throw new IllegalArgumentException("negative file offset " + offset); // -1 would mean the file position
        }
        if (index < 0 || count < 0 || index > iov.capacity() - count) {
            throw new IndexOutOfBoundsException("iovecs " + index + " to " + (index + count - 1) + " of "
                    + iov.capacity());
        }
        return prepare(opcode, fd, offset, iov.entryAddress(index), count, rwFlags, userData);
    }

    /** Fills the next free entry; its stores reach the kernel with the tail's release in {@link #submit()}. */
    private boolean prepare(int opcode, int fd, long off, long addr, int len, int opFlags, long userData) {
        if (closed) {
            throw new IllegalStateException("io_uring (" + ringFd + ") is closed");
        }
        if (sqeTail - sqHeadSeen == sqEntries) {
            // Looks full: look again where the kernel stands (acquire: see the class comment).
            sqHeadSeen = (int) INT.getAcquire(rings, sqHead);
            if (sqeTail - sqHeadSeen == sqEntries) {
                return false;
            }
        }
        long at = SQE_BYTES * (sqeTail & sqMask);
        sqes.set(JAVA_BYTE, at + SQE_OPCODE, (byte) opcode);
        sqes.set(JAVA_BYTE, at + SQE_FLAGS, (byte) 0);
        sqes.set(JAVA_SHORT, at + SQE_IOPRIO, (short) 0);
        sqes.set(JAVA_INT, at + SQE_FD, fd);
        sqes.set(JAVA_LONG, at + SQE_OFF, off);
        sqes.set(JAVA_LONG, at + SQE_ADDR, addr);
        sqes.set(JAVA_INT, at + SQE_LEN, len);
        sqes.set(JAVA_INT, at + SQE_OP_FLAGS, opFlags);
        sqes.set(JAVA_LONG, at + SQE_USER_DATA, userData);
        for (long w = SQE_TAIL_WORDS; w < SQE_BYTES; w += 8) {
            sqes.set(JAVA_LONG, at + w, 0L);
        }
        sqeTail++;
        return true;
    }

    /**
     * Hands every prepared entry to the kernel.
     *
     * @return how many it consumed (every pending one, unless one failed to start: its completion says why, and the
     *         rest wait for the next call), or {@code -EAGAIN} (the kernel lacked resources for a request) or
     *         {@code -EBUSY} (completions overflowed the CQ: {@link #reap} first): nothing consumed, try again
     * @throws LinuxException for another failure of io_uring_enter
     */
    public int submit() {
        return enter(0, 0);
    }

    /**
     * Like {@link #submit()}, then waits until at least {@code minComplete} completions wait to be reaped
     * (including those already waiting).
     *
     * @return as {@link #submit()}
     */
    public int submitAndWait(int minComplete) {
        if (minComplete < 0 || minComplete > cqEntries) {
            throw new IllegalArgumentException("wait for 0 to " + cqEntries + " completions, not " + minComplete);
        }
        return enter(minComplete, IORING_ENTER_GETEVENTS);
    }

    /**
     * Waits, submitting nothing, until at least {@code minComplete} completions wait to be reaped (including those
     * already waiting): for a caller that must let requests finish before it can go on.
     *
     * @return 0, or {@code -EAGAIN} / {@code -EBUSY} as {@link #submit()}
     */
    public int awaitCompletions(int minComplete) {
        if (minComplete < 1 || minComplete > cqEntries) {
            throw new IllegalArgumentException("wait for 1 to " + cqEntries + " completions, not " + minComplete);
        }
        return enter(false, minComplete, IORING_ENTER_GETEVENTS);
    }

    private int enter(int minComplete, int flags) {
        return enter(true, minComplete, flags);
    }

    private int enter(boolean submitting, int minComplete, int flags) {
        if (closed) {
            throw new IllegalStateException("io_uring (" + ringFd + ") is closed");
        }
        int toSubmit = 0;
        if (submitting) {
            // Release: every entry's stores before the tail that exposes it (see the class comment).
            INT.setRelease(rings, sqTail, sqeTail);
            toSubmit = sqPending();
        }
        if (toSubmit == 0 && flags == 0) {
            return 0;
        }
        long r = enterUncaptured(toSubmit, minComplete, flags);
        if (r < 0) {
            // It consumed nothing (enter reports an error only then): again, capturing errno, to learn why. A wait
            // a signal interrupted (EINTR: a profiler's SIGPROF, a signal at shutdown) is made again inside
            // callOrErrno, so it never reaches the throw below.
            enterToSubmit = toSubmit;
            enterMinComplete = minComplete;
            enterFlags = flags;
            r = Native.callOrErrno(enterName, enterCall);
            if (r < 0 && r != -Errno.EAGAIN && r != -Errno.EBUSY) {
                throw new LinuxException(enterName, (int) -r);
            }
        }
        return (int) r;
    }

    private long enterUncaptured(int toSubmit, int minComplete, int flags) {
        try {
            return (long) ENTER.invokeExact(SYS_IO_URING_ENTER, (long) fd, (long) toSubmit, (long) minComplete,
                    (long) flags, 0L, 0L);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(enterName + " downcall failed", t); // a downcall throws nothing checked
        }
    }

    /**
     * Hands every waiting completion to {@code handler}, without waiting, and returns how many. Each entry's slot
     * is given back to the kernel before the handler sees it, so the handler may prepare and submit more (it must
     * not reap). Completions the kernel held aside when the CQ overflowed are moved in and handed over too.
     */
    public int reap(CompletionHandler handler) {
        if (closed) {
            throw new IllegalStateException("io_uring (" + ringFd + ") is closed");
        }
        int n = 0;
        while (true) {
            int tail = (int) INT.getAcquire(rings, cqTail); // acquire: entries before it are written
            while (cqHeadLocal != tail) {
                long at = cqes + CQE_BYTES * (cqHeadLocal & cqMask);
                long userData = rings.get(JAVA_LONG, at);
                int result = rings.get(JAVA_INT, at + CQE_RES);
                int flags = rings.get(JAVA_INT, at + CQE_FLAGS);
                cqHeadLocal++;
                // Release: the slot's reads above before the kernel may overwrite it (see the class comment).
                INT.setRelease(rings, cqHead, cqHeadLocal);
                n++;
                handler.completed(userData, result, flags);
            }
            if (!cqOverflowed()) {
                return n;
            }
            // Completions overflowed the ring and wait in the kernel: an enter with GETEVENTS moves them in (the
            // ring was just emptied). EAGAIN/EBUSY leave them for the next reap.
            if (enter(false, 0, IORING_ENTER_GETEVENTS) < 0) {
                return n;
            }
        }
    }

    /**
     * Makes the kernel signal {@code eventFd} whenever it posts a completion, so an epoll loop can sleep until there
     * is something to reap. The eventfd stays the caller's; reading it is the caller's business.
     */
    public void registerEventFd(EventFd eventFd) {
        int efd = eventFd.fileDescriptor().fd();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment arg = a.allocate(JAVA_INT);
            arg.set(JAVA_INT, 0, efd);
            Native.call("io_uring_register(fd " + fd + ", EVENTFD, " + eventFd + ")",
                    st -> (long) REGISTER.invokeExact(st, SYS_IO_URING_REGISTER, (long) fd,
                            (long) IORING_REGISTER_EVENTFD, arg, 1L));
        }
    }

    /**
     * Unmaps the rings and closes the instance. Requests still in flight are cancelled or finished by the kernel on
     * its own time, and may still write the memory they were given: reap everything first.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            arena.close();
        } finally {
            ringFd.close();
        }
    }

    @Override
    public String toString() {
        return "io_uring(" + ringFd + ", " + sqEntries + "/" + cqEntries + " entries)";
    }
}
