package io.virtio4j.devices.worker;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.vhost.backend.QueueContext;

import java.util.function.BinaryOperator;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * The queue runners a device owns, one per slot (a slot is whatever one thread serves: a blk request queue, a net
 * queue pair): the device-side lifecycle every device shares, so it is written once. A slot's runner and worker are
 * made on the first attach, pinned round robin over the device's CPUs; {@link #reset()} closes them all, keeps a
 * runner whose thread has not ended ({@link LingeringRunners}, for {@link #retire}) and folds the workers'
 * statistics into the slot's statistics over the device's life, so {@link #stats(int)} counts across connections.
 *
 * <p>Control path only: every method takes this object's lock (a worker's thread never calls in).
 *
 * @param <W> the device's work of one slot
 * @param <S> its statistics: a fresh object from {@code zero}, added up by {@code plus} (null counts as zero)
 */
public final class DeviceRunners<W extends QueueWorker, S> {
    private final String threadPrefix;
    private final int[] cpus;
    private final long hybridSpinNanos;
    private final IntFunction<W> newWorker;
    private final Function<W, S> statsOf;
    private final Supplier<S> zero;
    private final BinaryOperator<S> plus;
    private final QueueRunner[] runners;
    private final W[] workers;
    /** Per slot: the statistics of the workers {@link #reset()} closed (null before the first). */
    private final S[] retired;
    /** Runners closed whose threads had not ended: the guest memory they may touch stays mapped until they do. */
    private final LingeringRunners lingering = new LingeringRunners();

    /**
     * @param threadPrefix    a slot's thread is named this followed by the slot number
     * @param slots           how many runners at most
     * @param cpus            CPUs to pin the slots' threads to, round robin (empty: not pinned)
     * @param hybridSpinNanos how long HYBRID queues are spun on before a thread sleeps
     * @param newWorker       the work of slot {@code n}, made when its runner is
     * @param statsOf         a worker's statistics now (read on the control thread)
     * @param zero            empty statistics
     * @param plus            {@code a} plus {@code b}, as a new object; {@code b} may be null (zero)
     */
    @SuppressWarnings("unchecked")
    public DeviceRunners(String threadPrefix, int slots, int[] cpus, long hybridSpinNanos, IntFunction<W> newWorker,
                         Function<W, S> statsOf, Supplier<S> zero, BinaryOperator<S> plus) {
        this.threadPrefix = threadPrefix;
        this.cpus = cpus.clone();
        this.hybridSpinNanos = hybridSpinNanos;
        this.newWorker = newWorker;
        this.statsOf = statsOf;
        this.zero = zero;
        this.plus = plus;
        this.runners = new QueueRunner[slots];
        // Arrays of the type parameters: only this class reads and writes them, with W and S values.
        this.workers = (W[]) new QueueWorker[slots];
        this.retired = (S[]) new Object[slots];
    }

    /** Hands {@code queue} to slot {@code slot}'s runner, started on first use. */
    public synchronized void attach(int slot, QueueContext queue, NotificationMode mode) {
        runner(slot).attach(queue, mode);
    }

    /** Takes queue {@code index} back from slot {@code slot}'s runner; nothing when the slot has none. */
    public synchronized void detach(int slot, int index) {
        QueueRunner r = slot >= 0 && slot < runners.length ? runners[slot] : null;
        if (r != null) {
            r.detach(index);
        }
    }

    /** Closes every runner (each keeps its queues' fds to itself if its thread does not end: see retire). */
    public synchronized void reset() {
        for (int i = 0; i < runners.length; i++) {
            if (runners[i] != null) {
                runners[i].close();
                lingering.add(runners[i]); // kept if its thread did not end: see retire
                retired[i] = plus.apply(statsOf.apply(workers[i]), retired[i]);
                runners[i] = null;
                workers[i] = null;
            }
        }
    }

    /** Unmaps once every queue thread that did not stop has ended (never, if one never does). */
    public void retire(Runnable unmap) {
        lingering.retire(unmap);
    }

    /** Statistics of slot {@code slot} over the device's life, across connections. */
    public synchronized S stats(int slot) {
        W w = workers[slot];
        return plus.apply(plus.apply(zero.get(), retired[slot]), w == null ? null : statsOf.apply(w));
    }

    /**
     * Every slot's statistics, slot {@code i} at index {@code i}, taken under one lock (a scrape sees no slot reset
     * half-way): what a device's metrics collection reads.
     */
    public synchronized S[] allStats(IntFunction<S[]> newArray) {
        S[] all = newArray.apply(runners.length);
        for (int i = 0; i < all.length; i++) {
            all[i] = stats(i);
        }
        return all;
    }

    /** Every slot's statistics added up. */
    public synchronized S totals() {
        S s = zero.get();
        for (int i = 0; i < runners.length; i++) {
            s = plus.apply(s, stats(i));
        }
        return s;
    }

    /** The id of the thread serving slot {@code slot} now, or -1 while it is not started. */
    public synchronized long threadId(int slot) {
        QueueRunner r = runners[slot];
        return r == null ? -1 : r.threadId();
    }

    /**
     * Null when the thread serving slot {@code slot} now is pinned to its CPU or was not asked to be, else why it is
     * not ({@link QueueRunner#pinError()}); "not started" while it is not.
     */
    public synchronized String pinError(int slot) {
        QueueRunner r = runners[slot];
        return r == null ? "slot " + slot + "'s thread is not started" : r.pinError();
    }

    private QueueRunner runner(int slot) {
        if (runners[slot] == null) {
            int cpu = cpus.length == 0 ? -1 : cpus[slot % cpus.length];
            workers[slot] = newWorker.apply(slot);
            runners[slot] = new QueueRunner(threadPrefix + slot, cpu, hybridSpinNanos, workers[slot]);
        }
        return runners[slot];
    }
}
