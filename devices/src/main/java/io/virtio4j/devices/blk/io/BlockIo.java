package io.virtio4j.devices.blk.io;

import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;

/**
 * An I/O engine for one queue thread: takes block operations on the backing store, with their data straight in
 * guest memory (the iovecs point into the mapped regions: no bounce copy), and reports each one's result when it
 * finishes, possibly out of order. One thread uses an engine; each queue thread has its own over the shared store.
 *
 * <p>Life of an operation: {@link #queue} it (tagged with the caller's {@code tag}), {@link #submit()} what was
 * queued, {@link #reap} finished ones. A synchronous engine does the work in {@code submit}; an asynchronous one
 * hands it to the kernel there and finishes later. The caller must keep the iovecs and the memory they point at
 * untouched and mapped until the operation is reaped, and must reap everything ({@link #inFlight()} 0) before it
 * lets the memory go: the kernel may write guest memory until then.
 *
 * <p>Queue, submit and reap allocate nothing.
 */
public interface BlockIo extends AutoCloseable {
    /** Read {@code length} bytes at {@code offset} into the iovecs. */
    int READ = 0;
    /** Write {@code length} bytes from the iovecs at {@code offset}. */
    int WRITE = 1;
    /** Make every completed write durable (fdatasync); offset, length and iovecs unused. */
    int FLUSH = 2;
    /**
     * Deallocate {@code length} bytes at {@code offset}; they then read back as zeros on a file. A hint: where the
     * file system cannot deallocate, a successful no-op (see {@link BlockEngine#open}).
     */
    int DISCARD = 3;
    /**
     * Make {@code length} bytes at {@code offset} read back as zeros, keeping them allocated; where the file system
     * cannot, by writing zeros (see {@link BlockEngine#open}).
     */
    int WRITE_ZEROES = 4;
    /** Make {@code length} bytes at {@code offset} read back as zeros; they may be deallocated. */
    int WRITE_ZEROES_UNMAP = 5;

    /** The most operations in flight (queued, submitted and not yet reaped) at once. */
    int depth();

    /** Operations queued or submitted and not yet reaped. */
    int inFlight();

    /**
     * Queues operation {@code op} ({@link #READ} ... {@link #WRITE_ZEROES_UNMAP}) of {@code length} bytes at byte
     * {@code offset} of the store; READ and WRITE move the bytes through entries {@code iovIndex} to
     * {@code iovIndex + iovCount - 1} of {@code iov}, whose lengths add up to {@code length}. The caller checked the
     * range against the store's size.
     *
     * @return false when {@link #depth()} operations are in flight already (nothing was queued)
     */
    boolean queue(int tag, int op, long offset, long length, IoVecs iov, int iovIndex, int iovCount);

    /** Starts every queued operation (a synchronous engine performs them here). */
    void submit();

    /**
     * Hands every finished operation to {@code sink}, without waiting; returns how many. Each result is the
     * operation's whole length (0 for FLUSH) or a negative errno: a short transfer is never reported as done.
     */
    int reap(Completion sink);

    /**
     * An eventfd that becomes readable when operations have finished and wait to be reaped (for the queue thread's
     * epoll set), or null when {@link #reap} never has to be waited for (a synchronous engine).
     *
     * <p>The caller reads it (drains its counter) when it wakes for it and <em>before</em> it reaps, never after: a
     * completion posted after the read signals it again, so none is slept through, whereas a read after the reap
     * could swallow the signal of a completion that came in between and leave it unreaped while the thread sleeps.
     * A reap without a read first (a pass woken by a kick) is harmless: the eventfd stays readable and the next wait
     * returns at once.
     */
    EventFd completionFd();

    /** Waits for every operation in flight to finish and drops their results; then frees the engine. */
    @Override
    void close();

    /** Receives finished operations. */
    @FunctionalInterface
    interface Completion {
        /** Operation {@code tag} finished: {@code result} is its length (0 for FLUSH) or a negative errno. */
        void completed(int tag, long result);
    }
}
