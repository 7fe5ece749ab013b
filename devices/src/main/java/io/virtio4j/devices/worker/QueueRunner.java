package io.virtio4j.devices.worker;

import io.virtio4j.core.error.GuestMemoryFaultException;
import io.virtio4j.core.notify.IdleWait;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.os.Affinity;
import io.virtio4j.os.Epoll;
import io.virtio4j.os.LinuxException;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.events.QueueBroken;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Runs a {@link QueueWorker} on a thread of its own (Agrona's AgentRunner, rust-vmm's VringEpollHandler): pins
 * the thread, owns its arena and its epoll set (the mailbox's wake-up eventfd, the kick eventfd of every attached
 * queue, and whatever fds the worker adds), hands queues over through the mailbox, and idles as the attached
 * queues' notification modes say.
 *
 * <h2>Idle policy</h2>
 * Each queue is attached with its {@link NotificationMode}; a queue without a kick eventfd (the front-end asked
 * to be polled) counts as POLL. The thread serves all its queues, so it may sleep only when every one of them may
 * be slept on: with a POLL queue attached it never sleeps; otherwise, with a HYBRID queue, it spins for the hybrid
 * budget first; with only NOTIFY queues (or none) it goes to sleep after the first pass that found nothing. The
 * spinning is core's {@link IdleWait}; before sleeping the worker arms its notifications
 * ({@link QueueWorker#prepareSleep()}).
 *
 * <h2>A broken queue</h2>
 * A queue the driver broke (a ring violation the worker caught) is reported after the pass that found it: its
 * error eventfd is signalled once (SET_VRING_ERR), and the worker goes on with its other queues.
 *
 * <h2>Death</h2>
 * A throwable out of the worker ends the thread: every attached queue is broken ({@link QueueAbandonedException})
 * and its error eventfd signalled (SET_VRING_ERR), and the mailbox fails every request at once. Attaching to a
 * dead runner breaks the queue the same way, detaching returns at once (nothing touches the queue), and
 * {@link #close()} joins a thread that has already ended: the control thread never waits for a dead worker, and
 * the connection goes on answering.
 *
 * <h2>Guest memory faults</h2>
 * A front-end that shrinks the file under a mapped region makes the next touch of those pages raise SIGBUS, which
 * HotSpot turns into an {@link InternalError} in the touching thread ({@link GuestMemoryFaultException} says which).
 * That is not a death: the thread breaks the queues it holds ({@link GuestMemoryFaultException}), signals their error
 * eventfds and serves on (see {@link #loop}); system calls on such memory (the engines' preadv, pwritev, io_uring)
 * fail with EFAULT instead, which the device answers as an I/O error.
 *
 * <h2>A worker that does not answer</h2>
 * When the worker does not take a request in time, or takes it and does not finish it (a pass or a request that
 * does not end), the request fails with {@link WorkerUnresponsiveException} and the runner is poisoned for good:
 * the worker may hold queues, or be half way through the request, and will never be asked to give them back. So
 * the control thread signals the error eventfd of every queue it handed over (and of the one it was handing
 * over), and from then on treats the runner as dead: a later attach breaks its queue at once, a detach returns at
 * once. The queues the worker may hold stay its own to break (a queue's state is its owner thread's): once it
 * comes back, it sees the poison before it sleeps again, breaks them ({@link QueueAbandonedException}: a queue
 * object only, no fd, no guest memory) and ends, reading no kick eventfd and signalling nothing. Ownership then:
 * the runner's own fds (epoll set, mailbox eventfd) stay open as long as the thread may run ({@link #close()}
 * leaves them to it); the queues' kick, call and error eventfds stay the connection's: it closes the kicks when it
 * ends, and parks the call and error numbers on a sink eventfd, closed through the device's retire path like the
 * memory (a late signal of the stuck worker must not reach a reused number). The guest mappings are not unmapped
 * under it: a worker stuck inside a device call may still touch a ring,
 * or have the kernel read and write guest memory, so the device keeps a closed runner whose thread has not ended
 * ({@link LingeringRunners}) and the connection's memory is unmapped only once {@link #ended()} (leaked if never).
 */
public final class QueueRunner implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(QueueRunner.class.getName());
    /** Epoll tokens from here on are the worker's; below are queue indexes (kicks) and the mailbox. */
    public static final long DEVICE_TOKENS = 1L << 32;
    private static final long WAKE = -1;
    /** Queue indexes are 8 bits in vhost-user (VRING_IDX_MASK): at most this many queues per thread. */
    private static final int MAX_QUEUES = 256;
    /**
     * While queues are attached, a sleep ends after this long even without an event: a pass then looks at the
     * rings, a net under a lost notification. The pass costs nothing when there is nothing to do.
     */
    private static final int WAIT_MILLIS = 200;
    /** How long the control thread waits for a request to be taken; a pass is bounded by the device's weight. */
    static final long DEFAULT_TIMEOUT_MILLIS = 5_000;

    private final String name;
    private final int cpu;
    private final QueueWorker worker;
    private final long hybridSpinNanos;
    private final WorkerMailbox mailbox;
    private final Epoll epoll;
    private final Thread thread;
    private volatile boolean stop;
    /**
     * Why the thread is not pinned to {@link #cpu} now, or null when it is (or was not asked to be): set before the
     * thread starts, cleared by the thread once pinned. Written by the thread, read by anyone (a benchmark reporting
     * whether its figures came from a pinned thread).
     */
    private volatile String pinError;
    /** What runs once the thread has ended ({@link #whenEnded}); guarded by itself, as is {@link #ended}. */
    private final List<Runnable> atEnd = new ArrayList<>();
    private boolean ended;
    /** The queues handed over and not taken back, as the control thread sees them (control thread only). */
    private final QueueContext[] handedOver = new QueueContext[MAX_QUEUES];

    // ---- worker-thread state ----
    private final QueueContext[] queues = new QueueContext[MAX_QUEUES];
    private final NotificationMode[] modes = new NotificationMode[MAX_QUEUES];
    private int attached;
    /** The indexes of the attached queues, {@code [0, attached)}: what a pass's end looks through for breaks. */
    private final int[] attachedIndexes = new int[MAX_QUEUES];
    /** Whether queue i's break was reported through its error eventfd (once per attachment). */
    private final boolean[] breakReported = new boolean[MAX_QUEUES];
    private IdleWait idle = new IdleWait(NotificationMode.NOTIFY, 0);

    /**
     * Starts the thread.
     *
     * @param name            the thread's name, also used in logs and errors
     * @param cpu             the CPU to pin the thread to, or -1
     * @param hybridSpinNanos how long HYBRID queues are spun on before the thread sleeps
     */
    public QueueRunner(String name, int cpu, long hybridSpinNanos, QueueWorker worker) {
        this(name, cpu, hybridSpinNanos, worker, DEFAULT_TIMEOUT_MILLIS);
    }

    QueueRunner(String name, int cpu, long hybridSpinNanos, QueueWorker worker, long timeoutMillis) {
        this.name = name;
        this.cpu = cpu;
        this.worker = worker;
        this.hybridSpinNanos = hybridSpinNanos;
        this.mailbox = new WorkerMailbox(name, timeoutMillis, this::breakOnFault);
        this.epoll = Epoll.create(16);
        try {
            epoll.add(mailbox.wakeFd().fileDescriptor(), Epoll.EPOLLIN, WAKE);
        } catch (RuntimeException e) {
            epoll.close();
            mailbox.close();
            throw e;
        }
        this.pinError = cpu >= 0 ? name + " not pinned to CPU " + cpu + " yet" : null;
        this.thread = new Thread(this::run, name);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /**
     * Null when the thread is pinned to its CPU (or was not asked to be), else why it is not: it has not got to it
     * yet, or the kernel refused (the error is also logged).
     */
    public String pinError() {
        return pinError;
    }

    /** The thread's id, for CPU time and allocation figures (ThreadMXBean). */
    public long threadId() {
        return thread.threadId();
    }

    /** What killed the worker, or null while it lives (or after a clean stop). */
    public Throwable failure() {
        return mailbox.death();
    }

    /**
     * Control thread (one call at a time): hands a started queue to the worker, waited on as {@code mode} says;
     * returns once the worker has it. On a dead runner the queue is broken and its error eventfd signalled
     * instead, and it counts as handed over all the same (a {@link #detach} takes it back).
     *
     * @throws WorkerUnresponsiveException when the worker does not answer in time: q is not attached (the worker
     *                                     may hold it all the same), and the runner is poisoned (see the class
     *                                     comment)
     * @throws LinuxException              when its kick eventfd cannot be watched (the queue is not attached)
     */
    public void attach(QueueContext q, NotificationMode mode) {
        if (q.index() < 0 || q.index() >= MAX_QUEUES) {
            throw new IllegalArgumentException("queue index " + q.index() + " outside [0, " + MAX_QUEUES + ")");
        }
        if (handedOver[q.index()] != null) {
            throw new IllegalStateException(name + ": queue " + q.index() + " is attached already");
        }
        if (mailbox.death() != null || mailbox.poisoned()) {
            handedOver[q.index()] = q;
            abandonFromControl(q, lostWorker(mailbox.unanswered()));
            return;
        }
        if (q.kick() != null) {
            // Registered from this thread (epoll_ctl is thread-safe), so a kick fd that cannot be watched fails
            // the request here and leaves the worker alone. A kick that came before is reported at once.
            epoll.add(q.kick().fileDescriptor(), Epoll.EPOLLIN, q.index());
        }
        NotificationMode effective = q.kick() == null ? NotificationMode.POLL : mode;
        try {
            mailbox.runOnWorker(() -> {
                // The bookkeeping first: a guest memory fault in onAttach (its memory faulted already) may surface
                // as late as after it returned, and the mailbox then breaks the thread's queues, q with them, and
                // answers the request as done (see WorkerMailbox).
                track(q, effective);
                worker.onAttach(q);
            });
            handedOver[q.index()] = q;
        } catch (WorkerDeadException e) {
            // Either the worker broke q while dying (it had it) or it never saw it: after the join, q is ours.
            handedOver[q.index()] = q;
            awaitEnd();
            abandonFromControl(q, lostWorker(e));
        } catch (WorkerUnresponsiveException e) {
            // The worker may have set q up (it took the request) or not (withdrawn): q is lost either way, and so
            // is every queue it holds. q is not handed over: the front-end may restart the ring, and that start is
            // then broken at once like any start on a poisoned runner.
            unwatch(q);
            reportLost(q, e);
            reportHandedOverLost(e);
            throw e;
        }
    }

    /**
     * Control thread (one call at a time): takes queue {@code index} away, if it was handed over; returns only once
     * the worker no longer touches it (at once when the worker is dead or poisoned).
     *
     * @throws WorkerUnresponsiveException when the worker does not answer in time: it may still hold the queue, so
     *                                     the caller must treat the ring as lost; the runner is poisoned (see the
     *                                     class comment): every queue it held is reported lost and broken by the
     *                                     worker when it comes back
     */
    public void detach(int index) {
        QueueContext q = index >= 0 && index < MAX_QUEUES ? handedOver[index] : null;
        if (q == null) {
            return;
        }
        handedOver[index] = null;
        try {
            if (mailbox.death() == null && !mailbox.poisoned()) {
                mailbox.runOnWorker(() -> {
                    if (queues[q.index()] == q) {
                        detachFromWorker(q);
                    }
                });
            }
        } catch (WorkerDeadException e) {
            // Dead before or while detaching: the thread ends without touching q again.
            LOG.fine(name + ": detaching queue " + q.index() + " from a dead worker");
        } catch (WorkerUnresponsiveException e) {
            reportLost(q, e);
            reportHandedOverLost(e);
            throw e;
        } finally {
            unwatch(q);
        }
        if (mailbox.death() != null) {
            awaitEnd();
        }
    }

    private void unwatch(QueueContext q) {
        if (q.kick() != null) {
            try {
                epoll.delete(q.kick().fileDescriptor());
            } catch (LinuxException e) {
                LOG.fine(name + ": kick of queue " + q.index() + " was not watched: " + e.getMessage());
            }
        }
    }

    /** Stops the thread (a bounded wait) and releases what the runner owns. */
    @Override
    public void close() {
        stop = true;
        mailbox.wake();
        awaitEnd();
        if (thread.isAlive()) {
            LOG.warning(name + ": did not stop within " + DEFAULT_TIMEOUT_MILLIS + " ms; leaving its fds open");
            return; // closing the epoll set or the eventfd under a running thread could hit a reused fd number
        }
        epoll.close();
        mailbox.close();
    }

    /**
     * Whether the thread has ended: it touches no queue, no guest memory and no memory of its worker any more, and
     * its worker's I/O has finished ({@link QueueWorker#onStop} returned).
     */
    public boolean ended() {
        synchronized (atEnd) {
            return ended;
        }
    }

    /**
     * Runs {@code action} once the thread has ended: at once (here) when it has, otherwise on the thread as the
     * last thing it does; never when the thread never ends. Control path only (it takes a lock).
     */
    public void whenEnded(Runnable action) {
        synchronized (atEnd) {
            if (!ended) {
                atEnd.add(action);
                return;
            }
        }
        action.run();
    }

    /** Worker thread, its very last step: marks it ended and runs what waited for that. */
    private void end() {
        Runnable[] actions;
        synchronized (atEnd) {
            ended = true;
            actions = atEnd.toArray(Runnable[]::new);
            atEnd.clear();
        }
        for (Runnable a : actions) {
            try {
                a.run();
            } catch (Throwable t) {
                LOG.log(Level.SEVERE, name + ": at its end: " + t, t);
            }
        }
    }

    private void awaitEnd() {
        try {
            thread.join(DEFAULT_TIMEOUT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Worker thread: the idle policy the attached queues' modes call for (see the class comment). */
    private IdleWait idlePolicy() {
        NotificationMode m = NotificationMode.NOTIFY;
        for (int i = 0; i < MAX_QUEUES && m != NotificationMode.POLL; i++) {
            if (modes[i] == NotificationMode.POLL || (modes[i] == NotificationMode.HYBRID)) {
                m = modes[i];
            }
        }
        return new IdleWait(m, hybridSpinNanos);
    }

    /**
     * Worker thread, ending of a throwable or of a poison: breaks every queue it holds. Signals their error
     * eventfds only when not poisoned: after a poison the control thread has signalled them, and the connection
     * may have closed them since.
     */
    private void breakAttached(Throwable cause) {
        boolean signal = !mailbox.poisoned();
        for (int i = 0; i < MAX_QUEUES; i++) {
            QueueContext q = queues[i];
            if (q != null) {
                queues[i] = null;
                q.queue().fail(new QueueAbandonedException(q.index(), name, cause));
                if (signal && !breakReported[i]) {
                    // what broke it first: a violation found earlier and not yet reported, or this
                    QueueBroken.emit(q.index(), name, q.queue().violation());
                }
                breakReported[i] = true; // once: no pass follows, but keep the one rule
                if (signal) {
                    signalError(q);
                }
            }
        }
    }

    private void run() {
        if (cpu >= 0) {
            try {
                Affinity.pinCurrentThread(cpu);
                pinError = null;
            } catch (LinuxException | IllegalArgumentException e) {
                pinError = name + " not pinned to CPU " + cpu + ": " + e.getMessage();
                LOG.warning(pinError);
            }
        }
        Throwable death = null;
        try (Arena arena = Arena.ofConfined()) {
            try {
                worker.onStart(arena, epoll);
                loop();
                if (mailbox.poisoned()) {
                    breakAttached(mailbox.unanswered());
                }
            } catch (Throwable t) {
                death = t;
                die(t);
            }
            // Inside the arena's life: the worker's I/O in flight reads and writes memory of this arena (iovec
            // arrays) as well as guest memory, so onStop waits for it before the arena goes. And before the control
            // thread hears of a death (mailbox.die below): it would go on to reset the device and unmap guest
            // memory the kernel may still be writing.
            try {
                worker.onStop();
            } catch (Throwable t) {
                LOG.log(Level.SEVERE, name + ": stopping: " + t, t);
            }
        } catch (Throwable t) {
            death = death == null ? t : death; // the arena would not close: nothing more can go wrong after it
        } finally {
            try {
                if (death != null) {
                    mailbox.die(death); // whatever happened above, the control thread must not wait for this thread
                }
            } finally {
                end();
            }
        }
    }

    /**
     * The serving loop, resumed after a guest memory fault: the fault breaks every queue the thread holds (which
     * queue's memory faulted is not known here; a blk thread holds one queue, a net thread one pair) and signals
     * their error eventfds, and the thread goes on answering its mailbox, so the front-end can restart the rings.
     * The catch is around the whole loop, not one call: in compiled code HotSpot delivers the error asynchronously,
     * at the next safepoint poll after the faulting access (which reads as zero or garbage meanwhile: no worse than
     * anything else the front-end writes, as every read of guest memory is treated as hostile and bounds-checked).
     * Any other throwable still ends the thread ({@link #run}).
     */
    private void loop() {
        while (true) {
            try {
                serve();
                return;
            } catch (InternalError e) {
                breakOnFault(e);
            }
        }
    }

    /**
     * Worker thread: {@code q} is attached from now on, in {@code mode}. Keeps {@link #attachedIndexes} holding
     * exactly the indexes whose {@link #queues} entry is set, each once, whatever came before.
     */
    private void track(QueueContext q, NotificationMode mode) {
        int index = q.index();
        if (queues[index] == null) {
            attachedIndexes[attached++] = index;
        }
        queues[index] = q;
        modes[index] = mode;
        breakReported[index] = false;
        idle = idlePolicy();
    }

    /** Worker thread: {@code q} is no longer attached (the inverse of {@link #track}). */
    private void untrack(QueueContext q) {
        int index = q.index();
        if (queues[index] != q) {
            return;
        }
        for (int i = 0; i < attached; i++) {
            if (attachedIndexes[i] == index) {
                attachedIndexes[i] = attachedIndexes[--attached];
                break;
            }
        }
        queues[index] = null;
        modes[index] = null;
        idle = idlePolicy();
    }

    /**
     * Worker thread: the worker lets go of {@code q}. The bookkeeping comes first, so a guest memory fault that
     * surfaces late (after onDetach returned: the mailbox handles it) leaves nothing half done. A fault inside
     * onDetach (answering what finished writes guest memory) breaks the thread's queues and q, and the worker is
     * asked again, as often as it faults: with its queue broken it touches no guest memory, and it must still wait
     * for what is in flight, which has to be over before the memory may be unmapped. (A worker that faulted for
     * ever would not answer: the control thread's bounded wait poisons the runner, and the memory lingers.)
     */
    private void detachFromWorker(QueueContext q) {
        untrack(q);
        while (true) {
            try {
                worker.onDetach(q);
                return;
            } catch (InternalError e) {
                breakOnFault(e);
                breakFaulted(q, e);
            }
        }
    }

    /**
     * Worker thread: after a guest memory fault, breaks and reports every attached queue; any other internal error
     * is rethrown (it ends the thread).
     */
    private void breakOnFault(InternalError fault) {
        if (!GuestMemoryFaultException.isGuestMemoryFault(fault)) {
            throw fault;
        }
        for (int i = 0; i < MAX_QUEUES; i++) {
            QueueContext q = queues[i];
            if (q != null) {
                breakFaulted(q, fault);
            }
        }
    }

    /** Worker thread: breaks {@code q} for a guest memory fault and reports it, unless it is broken already. */
    private void breakFaulted(QueueContext q, InternalError fault) {
        if (q.queue().isBroken()) {
            return;
        }
        GuestMemoryFaultException broken = new GuestMemoryFaultException(q.index(), name, fault);
        LOG.warning(name + ": queue " + q.index() + " broken: " + broken.getMessage());
        q.queue().fail(broken);
        breakReported[q.index()] = true; // reported here: the pass's reportBroken must not signal it a second time
        if (!mailbox.poisoned()) { // after a poison the connection may have closed the error eventfd
            QueueBroken.emit(q.index(), name, broken);
            signalError(q);
        }
    }

    private void serve() {
        // The poison is checked after each call that may be the one that got stuck (a request in drain, a pass,
        // the arming): the control thread wrote it (volatile) before it let the connection go on, which may then
        // close our queues' fds, so a worker that reads it set stops before it reads a kick again.
        while (!stop && !mailbox.poisoned()) {
            boolean mail = mailbox.drain();
            if (mail && mailbox.poisoned()) { // only a request that ran can have been the one that got stuck
                break;
            }
            int work = worker.doWork();
            reportBroken();
            if (work > 0 || mail) {
                // Possibly cut short by the device's weight: go round again, so every queue and the mailbox get
                // their turn (vhost-net requeues its work the same way).
                idle.busy();
                continue;
            }
            if (idle.spin()) {
                continue;
            }
            if (!worker.prepareSleep() || mailbox.poisoned()) {
                continue; // work turned up while arming: serve it (or the loop's check ends it)
            }
            worker.onWake(sleep());
        }
    }

    /**
     * Worker thread, after each pass: a queue the pass (or a kick or event since the last one) found broken (a
     * {@link io.virtio4j.core.error.RingViolationException}: the driver wrote something no driver may) is no
     * longer served, and the front-end is told so through the ring's error eventfd (SET_VRING_ERR), once: the
     * worker goes on with its other queues and the control thread hears nothing of it. A look at each attached
     * queue's broken flag, no more, so a pass costs nothing more than that.
     */
    private void reportBroken() {
        for (int i = 0; i < attached; i++) {
            int index = attachedIndexes[i];
            QueueContext q = queues[index];
            if (!breakReported[index] && q.queue().isBroken()) {
                breakReported[index] = true;
                // After a poison the error eventfds are the control thread's to signal (see breakAttached).
                if (!mailbox.poisoned()) {
                    LOG.warning(name + ": queue " + index + " broken (" + q.queue().violation().getMessage()
                            + "): signalling its error eventfd");
                    QueueBroken.emit(index, name, q.queue().violation());
                    signalError(q);
                }
            }
        }
    }

    /** Waits on the epoll set and dispatches what is ready; returns how many events were the device's. */
    private int sleep() {
        int n = epoll.await(attached == 0 ? -1 : WAIT_MILLIS);
        int events = n;
        for (int i = 0; i < n; i++) {
            long token = epoll.data(i);
            if (token == WAKE) {
                mailbox.clearWake();
                events--;
            } else if (token >= DEVICE_TOKENS) {
                worker.onEvent(token, epoll.events(i));
            } else if (token >= 0 && token < MAX_QUEUES && !mailbox.poisoned()) {
                QueueContext q = queues[(int) token];
                // A kick of a queue detached since the wait returned is left to its eventfd's next owner; after a
                // poison (an onEvent or onKick above that got stuck) no kick is read: the connection owns them.
                if (q != null && q.kick() != null && q.kick().tryRead() != 0) {
                    worker.onKick(q);
                }
            }
        }
        return events;
    }

    /**
     * Worker thread, after a throwable: breaks every attached queue (nothing goes back to the ring from here on;
     * the mailbox is failed once the worker has stopped, see {@link #run}).
     */
    private void die(Throwable t) {
        LOG.log(Level.SEVERE, name + " died: " + t, t);
        try {
            breakAttached(t);
        } catch (Throwable u) {
            t.addSuppressed(u);
        }
    }

    /**
     * Why the worker serves nothing: its death, or the request it did not answer, or else {@code failed} (the
     * request that reported the death, when the dying thread has not recorded it yet: its onStop still runs).
     * Never null: {@code failed} is not, or the runner is dead or poisoned.
     */
    private Throwable lostWorker(Throwable failed) {
        Throwable t = mailbox.death();
        if (t == null) {
            t = mailbox.unanswered();
        }
        return t != null ? t : failed;
    }

    /**
     * Control thread, for a queue no live worker holds (the worker is dead and joined, or never had it): breaks
     * {@code q} and signals its error eventfd.
     */
    private void abandonFromControl(QueueContext q, Throwable cause) {
        LOG.warning(name + " serves nothing (" + cause.getMessage() + "): queue " + q.index() + " is not served");
        abandon(q, cause);
    }

    /**
     * Control thread, on poisoning, for a queue the stuck worker may hold: tells the front-end through the error
     * eventfd (still open: the connection is in the middle of the request). The worker breaks the queue itself.
     */
    private void reportLost(QueueContext q, Throwable cause) {
        LOG.warning(name + " does not answer (" + cause.getMessage() + "): queue " + q.index() + " is not served");
        QueueBroken.emit(q.index(), name, cause); // the queue object stays the worker's: only the cause is read
        signalError(q);
    }

    private void reportHandedOverLost(Throwable cause) {
        for (QueueContext q : handedOver) {
            if (q != null) {
                reportLost(q, cause);
            }
        }
    }

    private void abandon(QueueContext q, Throwable cause) {
        QueueAbandonedException abandoned = new QueueAbandonedException(q.index(), name, cause);
        q.queue().fail(abandoned);
        QueueBroken.emit(q.index(), name, abandoned);
        signalError(q);
    }

    /**
     * Tells the front-end that {@code q} is no longer served (SET_VRING_ERR). Every call site emits the
     * {@link QueueBroken} event beside it: one event per queue the front-end is told of, whichever thread tells.
     */
    private void signalError(QueueContext q) {
        try {
            q.signalError();
        } catch (LinuxException e) {
            LOG.warning(name + ": cannot signal the error eventfd of queue " + q.index() + ": " + e.getMessage());
        }
    }
}
