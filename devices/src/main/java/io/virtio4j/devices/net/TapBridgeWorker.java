package io.virtio4j.devices.net;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.devices.worker.QueueRunner;
import io.virtio4j.os.Epoll;
import io.virtio4j.os.Errno;
import io.virtio4j.os.FrameReadBatch;
import io.virtio4j.os.FramePort;
import io.virtio4j.os.TunTap;
import io.virtio4j.vhost.backend.QueueContext;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.logging.Logger;

/**
 * The work of one receive/transmit queue pair bridged to one queue of a tap ({@link NetMode.Tap}), in the manner of
 * Linux vhost-net: the runner's epoll set holds the mailbox eventfd, the transmit kick, the receive kick and the
 * tap; each pass runs the transmit handler (guest ring to tap) and the receive handler (tap to guest ring), each
 * bounded by the weight, and the thread sleeps only after a pass that found nothing to do.
 *
 * <p>It sleeps on the tap and on kicks, so its queues are NOTIFY queues: {@link NetDevice} refuses the other
 * notification modes in tap mode.
 *
 * <h2>Watching the tap</h2>
 * The tap is registered edge-triggered (EPOLLET). Like a vhost_poll entry on the tap's wait queue, an
 * edge-triggered registration reports once per wake-up of the tap's wait queue, and once when it is added or
 * modified while the tap is already ready; a level-triggered one would report an always-writable tap on every
 * epoll_wait and turn the thread into a busy loop. What is watched follows {@link TapPolling}:
 * <ul>
 * <li>rx-poll-stop on: EPOLLIN is dropped from the registration as soon as the receive handler starts draining,
 *     and added back only when a read returned EAGAIN (the tap is empty). When the mask becomes empty the tap is
 *     deleted from the epoll set (EPOLL_CTL_DEL), which takes our entry off the tap's wait queue: the kernel's
 *     transmit path then finds nobody to wake for each frame it queues. While the guest's receive ring is empty
 *     and frames wait, the tap is not watched at all: the worker asks the guest for a receive kick
 *     ({@link DeviceQueue#enableKicksOrFindPending()}), watches that kick, and sleeps until the guest posts buffers.
 *     Re-watching the still-readable tap there would wake us at once, for ever (the original vhost-net patch had
 *     that infinite loop).</li>
 * <li>rx-poll-stop off: EPOLLIN stays registered all the time. Frames arriving while we drain leave an edge
 *     behind that wakes us for nothing afterwards, and with an empty receive ring every arriving frame wakes us.</li>
 * <li>tx-poll on-eagain: EPOLLOUT is registered only after a write hit EAGAIN (the frame was given back to the
 *     ring), and dropped again once EPOLLOUT came.</li>
 * <li>tx-poll always: EPOLLOUT is registered all the time, so the tap never leaves the epoll set (and its wait
 *     queue), and each re-registration for rx reports EPOLLOUT at once: a wake-up with nothing to write.</li>
 * </ul>
 *
 * <h2>Kicks</h2>
 * Transmit kicks are enabled only while the worker is about to sleep with the transmit ring empty, and
 * re-checked after enabling (a buffer made available just before the enable is seen by that re-check, since
 * {@link DeviceQueue#enableKicksOrFindPending()} publishes avail_event, fences, and re-reads avail.idx). Receive kicks
 * are enabled only while a frame waits for buffers, with the same re-check. Both eventfds stay registered
 * (level-triggered); a kick that comes while disabled is read and counted.
 *
 * <h2>Reading the tap in batches</h2>
 * The receive handler reads the tap through a {@link FrameReadBatch}: several reads submitted by one io_uring_enter
 * (the class says why io_uring, of the ways to get several frames per system call), sized by the traffic, the read
 * that finds the tap empty included. Frames read but not yet delivered (the weight ran out, or the receive ring had
 * no buffers) stay in the batch and go first next time, in order; they count as the tap still holding frames for
 * the polling discipline (the tap is not watched while we hold frames of it). Frames still held when the worker
 * stops are counted as drops.
 *
 * <p>Frames are delivered from the batch's buffers into the guest's with one copy ({@link RxDelivery}), not read
 * straight into the guest's buffers: the length of the next frame is not known before the read, so a read into a
 * guest buffer smaller than the largest frame could cut one (a tap read takes the frame off the queue whole), and
 * with merged buffers the number of buffers a frame needs is known only after it was read; a guest buffer also
 * cannot be given back once the kernel wrote into it while later ones were taken. The copy keeps every check of
 * {@link RxDelivery} (header, size, merged buffers, dirty log) in one place.
 *
 * <p>Every per-frame path works on staging segments allocated once (guest frames are copied out before being
 * written, so the guest cannot change them under the kernel) and allocates nothing.
 */
final class TapBridgeWorker implements PairWork {
    private static final Logger LOG = Logger.getLogger(TapBridgeWorker.class.getName());
    /** Header plus the largest frame a tap hands over without offloads (64 KiB covers any MTU). */
    private static final int STAGING = TunTap.VNET_HDR_LEN + 65536;
    /** Most tap reads per system call: 16 frames of {@link #STAGING} bytes, 1 MiB per queue pair. */
    static final int READ_BATCH = 16;
    /** Bytes per handler run, besides the frame weight (vhost-net's VHOST_NET_WEIGHT). */
    private static final long BYTE_WEIGHT = 0x80000;
    private static final long TAP = QueueRunner.DEVICE_TOKENS;

    private final int pair;
    private final FramePort port;
    private final TapPolling polling;
    private final int weight;
    private final NetStats stats = new NetStats();

    // ---- runner-thread state ----
    private final PairQueues queues = new PairQueues();
    private Epoll epoll;
    /** Tap to guest: frames read from the tap, header first. */
    private FrameReadBatch rxBatch;
    /** The next result of {@link #rxBatch} to deliver; == {@link #rxMade} when all are done. */
    private int rxNext;
    /** Results in {@link #rxBatch}'s last batch. */
    private int rxMade;
    /** Guest to tap: a transmitted frame copied out of guest memory, header first. */
    private MemorySegment txFrame;
    /** The tap may hold frames: set by EPOLLIN (or not known yet), cleared by a read that returned EAGAIN. */
    private boolean tapReadable = true;
    /** The tap takes frames: cleared by a write that returned EAGAIN, set by EPOLLOUT. */
    private boolean tapWritable = true;
    /** The tap failed (its interface was deleted): transmitted frames are dropped, nothing is read. */
    private boolean tapFailed;
    /** Events the tap is registered for; 0 when it is not in the epoll set. */
    private int tapMask;
    /** A frame waits and the receive ring had no buffer for it: wait for the guest's receive kick. */
    private boolean rxStarved;
    /** The pass that follows a wake-up: if it finds nothing to do, the wake-up was spurious. */
    private boolean woke;
    private boolean loggedTxError;

    // per-round counters, folded into the shared stats once per handler run
    private long wakeups;
    private long spurious;
    private long readCalls;
    private final FrameCounts txCounts = new FrameCounts();
    private final FrameCounts rxCounts = new FrameCounts();

    TapBridgeWorker(int pair, FramePort port, TapPolling polling, int weight) {
        this.pair = pair;
        this.port = port;
        this.polling = polling;
        this.weight = weight;
    }

    @Override
    public NetStats stats() {
        return stats;
    }

    @Override
    public void onStart(Arena arena, Epoll epoll) {
        this.epoll = epoll;
        txFrame = arena.allocate(STAGING, 64);
        rxBatch = FrameReadBatch.create(port, READ_BATCH, STAGING, arena, true);
        if (!rxBatch.batched()) {
            LOG.info("queue pair " + pair + ": io_uring unavailable, reading " + port.name() + " one frame per read(2)");
        }
    }

    @Override
    public void onAttach(QueueContext q) {
        if (queues.attach(q)) {
            rxStarved = false;
            tapReadable = true; // frames may have queued up while there was no ring: look
        }
    }

    @Override
    public void onDetach(QueueContext q) {
        flush(q);
        if (queues.detach(q)) {
            rxStarved = false;
        }
    }

    @Override
    public void onStop() {
        long held = 0;
        for (; rxNext < rxMade; rxNext++) {
            if (rxBatch.length(rxNext) >= 0) {
                held++; // frames read from the tap that no ring will take now
            }
        }
        if (held > 0) {
            stats.add(NetStats.RX, NetStats.DROPS, held);
        }
        if (rxBatch != null) {
            rxBatch.close();
        }
        foldLoopCounters();
    }

    @Override
    public int doWork() {
        int work = handleTx() + handleRx();
        if (woke) {
            woke = false;
            if (work == 0) {
                spurious++;
            }
        }
        foldLoopCounters();
        return work;
    }

    // ---- guest to tap ----

    /** One bounded run over the transmit ring: each frame copied out and written to the tap. Returns frames taken. */
    private int handleTx() {
        QueueContext t = queues.tx;
        if (t == null || t.queue().isBroken()) {
            return 0;
        }
        boolean forward = t.enabled() && !tapFailed;
        if (forward && !tapWritable) {
            return 0; // a write hit EAGAIN: the ring waits until EPOLLOUT says the tap takes frames again
        }
        DeviceQueue q = t.queue();
        int n = 0;
        long eagain = 0;
        try {
            DescriptorChain c;
            while (n < weight && txCounts.bytes() < BYTE_WEIGHT && (c = q.pop()) != null) {
                long total = c.readableBytes();
                int head = c.head();
                if (!forward || total < NetFeatures.HDR_LEN + NetFeatures.ETH_HEADER || total > STAGING) {
                    // A disabled ring is drained without side effects; a malformed frame is dropped.
                    txCounts.drop();
                    q.pushUsed(head, 0);
                    n++;
                    continue;
                }
                // Copy header and frame out before the kernel sees them: the guest may rewrite its buffer at any
                // moment, and the tap must get one consistent frame.
                c.gather(0, txFrame, 0, total);
                long w = port.write(txFrame, total);
                if (w == -Errno.EAGAIN) {
                    // vhost-net: vhost_discard_vq_desc and poll the tap for writability. The chain goes back to
                    // the ring and is retried first once EPOLLOUT comes; nothing is lost.
                    q.unpop(head);
                    tapWritable = false;
                    eagain++;
                    break;
                }
                n++;
                if (w < 0) {
                    txCounts.drop(); // refused by the kernel (e.g. EINVAL for a bad header, EIO while the tap is down)
                    noteTxError(w);
                } else {
                    txCounts.good(txFrame, NetFeatures.HDR_LEN, total - NetFeatures.HDR_LEN);
                }
                q.pushUsed(head, 0);
            }
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": transmit queue " + t.index() + " broken: " + e.getMessage());
        }
        long bytes = txCounts.bytes();
        if (n > 0) {
            flush(t);
            txCounts.foldInto(stats, NetStats.TX);
        }
        if (eagain > 0) {
            stats.add(NetStats.TX, NetStats.EAGAIN, eagain);
        }
        if (n >= weight || bytes >= BYTE_WEIGHT) {
            stats.add(NetStats.TX, NetStats.WEIGHT_LIMITED, 1);
        }
        return n;
    }

    private void noteTxError(long negErrno) {
        if (!loggedTxError) {
            loggedTxError = true; // once per worker: a guest can make every frame fail
            LOG.warning("queue pair " + pair + ": " + port.name() + " refused a frame: " + Errno.name((int) -negErrno)
                    + " (further refusals are only counted as drops)");
        }
        if (negErrno == -Errno.EBADFD || negErrno == -Errno.EBADF) {
            tapGone(negErrno);
        }
    }

    // ---- tap to guest ----

    /** One bounded run from the tap into the receive ring. Returns the frames taken off the tap. */
    private int handleRx() {
        QueueContext r = queues.rx;
        if (r == null || !r.enabled() || r.queue().isBroken() || tapFailed || rxStarved) {
            return 0;
        }
        if (!tapReadable && !holdingFrames()) {
            return 0;
        }
        if (polling.rxPollStop()) {
            // Stop watching the tap while draining it: no wake-ups (and, once the tap is out of the epoll set,
            // no wait-queue callback in the sender's path) for frames we are about to read anyway.
            updateTapRegistration();
        }
        int n = 0;
        long eagain = 0;
        long empty = 0;
        try {
            while (n < weight && rxCounts.bytes() < BYTE_WEIGHT) {
                if (rxNext == rxMade) {
                    if (!tapReadable) {
                        break; // the last batch ended on an empty tap: drained
                    }
                    rxMade = rxBatch.read(Math.min(weight - n, READ_BATCH));
                    rxNext = 0;
                    readCalls += rxBatch.systemCalls();
                    // Drained only when the batch's last read found the tap empty: an EAGAIN before a frame means
                    // the frame arrived in between, and more may follow it.
                    if (rxBatch.length(rxMade - 1) == -Errno.EAGAIN) {
                        tapReadable = false; // only now is the tap worth watching again
                        eagain++;
                    }
                }
                long len = rxBatch.length(rxNext);
                if (len < 0) {
                    rxNext++;
                    if (len != -Errno.EAGAIN) {
                        tapGone(len);
                        break;
                    }
                    continue;
                }
                MemorySegment frame = rxBatch.frame(rxNext);
                int outcome = len > rxBatch.frameBytes() ? RxDelivery.DROPPED // cut to the buffer: never pass on
                        : queues.delivery.deliver(frame, len);
                if (outcome == RxDelivery.NO_BUFFERS) {
                    // Keep the frame (and those after it) and wait for the guest to post buffers: see
                    // prepareSleep(), which asks for its kick.
                    rxStarved = true;
                    empty++;
                    break;
                }
                n++;
                rxNext++;
                if (outcome == RxDelivery.DELIVERED) {
                    rxCounts.good(frame, NetFeatures.HDR_LEN, len - NetFeatures.HDR_LEN);
                } else {
                    rxCounts.drop();
                }
            }
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": receive queue " + r.index() + " broken: " + e.getMessage());
        }
        long bytes = rxCounts.bytes();
        if (rxCounts.packets() > 0) {
            flush(r);
        }
        rxCounts.foldInto(stats, NetStats.RX);
        if (eagain > 0) {
            stats.add(NetStats.RX, NetStats.EAGAIN, eagain);
        }
        if (empty > 0) {
            stats.add(NetStats.RX, NetStats.RING_EMPTY, empty);
        }
        if (n >= weight || bytes >= BYTE_WEIGHT) {
            stats.add(NetStats.RX, NetStats.WEIGHT_LIMITED, 1);
        }
        return n;
    }

    /** Frames read from the tap and not yet delivered wait in the batch (EAGAIN results are not frames). */
    private boolean holdingFrames() {
        for (int i = rxNext; i < rxMade; i++) {
            if (rxBatch.length(i) >= 0) {
                return true;
            }
        }
        return false;
    }

    private void tapGone(long negErrno) {
        if (!tapFailed) {
            tapFailed = true;
            LOG.warning("queue pair " + pair + ": " + port.name() + " failed (" + Errno.name((int) -negErrno)
                    + "): no more frames to or from it");
            updateTapRegistration();
        }
    }

    // ---- what the tap is watched for ----

    /**
     * Brings the tap's registration in line with the discipline and the current state, with one epoll_ctl at most:
     * ADD when it was not in the set, DEL when nothing is to be watched (which takes our entry off the tap's wait
     * queue), MOD otherwise. ADD and MOD check readiness at once, so a frame that arrived between the EAGAIN that
     * led here and the registration is reported, not lost.
     */
    private void updateTapRegistration() {
        int want = 0;
        if (!tapFailed) {
            boolean watchRx = !polling.rxPollStop() || (queues.rx != null && !tapReadable && !holdingFrames());
            if (watchRx) {
                want |= Epoll.EPOLLIN;
            }
            if (polling.txPoll() == TapPolling.TxPoll.ALWAYS || !tapWritable) {
                want |= Epoll.EPOLLOUT;
            }
        }
        if (want == tapMask) {
            return;
        }
        if (tapMask == 0) {
            epoll.add(port.fileDescriptor(), want | Epoll.EPOLLET, TAP);
        } else if (want == 0) {
            epoll.delete(port.fileDescriptor());
        } else {
            epoll.modify(port.fileDescriptor(), want | Epoll.EPOLLET, TAP);
        }
        tapMask = want;
        stats.addPair(NetStats.TAP_REGISTRATIONS, 1);
    }

    // ---- sleeping ----

    /** Arms what should wake us, each arm followed by a re-check, so that work arriving meanwhile is done. */
    @Override
    public boolean prepareSleep() {
        // The transmit ring is only worth a kick while the tap takes frames (or they are dropped anyway).
        QueueContext tx = queues.tx;
        if ((tapWritable || tx == null || !tx.enabled() || tapFailed) && !queues.txKick.arm(tx)) {
            return false; // buffers arrived while arming: serve them
        }
        if (rxStarved && !queues.rxKick.arm(queues.rx)) {
            rxStarved = false; // the guest posted buffers meanwhile: deliver
            return false;
        }
        updateTapRegistration();
        return true;
    }

    @Override
    public void onEvent(long token, int ev) {
        if (token != TAP) {
            return;
        }
        if ((ev & (Epoll.EPOLLIN | Epoll.EPOLLERR | Epoll.EPOLLHUP)) != 0) {
            tapReadable = true; // a read will tell (EAGAIN, a frame, or the error)
        }
        if ((ev & Epoll.EPOLLOUT) != 0 && !tapWritable) {
            tapWritable = true;
        }
    }

    @Override
    public void onKick(QueueContext q) {
        queues.kicked(q);
    }

    /** Records what woke us and disarms the kicks again for the next pass. */
    @Override
    public void onWake(int events) {
        if (events > 0) {
            wakeups++;
            woke = true;
        }
        // Working again: kicks are not needed while we look at the rings ourselves.
        queues.txKick.disarm(queues.tx);
        queues.rxKick.disarm(queues.rx);
        rxStarved = false; // look at the receive ring again; starving again costs one pop
        if (tapWritable && polling.txPoll() == TapPolling.TxPoll.ON_EAGAIN && (tapMask & Epoll.EPOLLOUT) != 0) {
            updateTapRegistration(); // EPOLLOUT came: stop watching for it
        }
    }

    /**
     * The loop's counters, and what a pass cut short by a fault other than VirtqueueException left in the frame counts
     * (it leaves doWork before handleTx or handleRx fold; QueueRunner breaks the queues, so the next pass returns
     * early): every frame served is counted, at the next doWork or at onStop. Two loads when there is nothing.
     */
    private void foldLoopCounters() {
        txCounts.foldInto(stats, NetStats.TX);
        rxCounts.foldInto(stats, NetStats.RX);
        if (wakeups != 0) {
            stats.addPair(NetStats.WAKEUPS, wakeups);
            wakeups = 0;
        }
        if (spurious != 0) {
            stats.addPair(NetStats.SPURIOUS_WAKEUPS, spurious);
            spurious = 0;
        }
        if (readCalls != 0) {
            stats.addPair(NetStats.TAP_READ_CALLS, readCalls);
            readCalls = 0;
        }
        queues.foldKicks(stats);
    }
}
