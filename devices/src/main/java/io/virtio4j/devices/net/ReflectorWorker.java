package io.virtio4j.devices.net;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.os.Epoll;
import io.virtio4j.vhost.backend.QueueContext;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.logging.Logger;

/**
 * The work of one queue pair in the modes without an outside world ({@link NetMode.Reflect}): frames the guest
 * transmits are taken from the transmit queue, counted, and dropped or returned on the receive queue of the same
 * pair, as the {@link NetMode.Reflection} says. A frame that goes back is copied out of guest memory first (the guest
 * may change it under us); of a dropped one only its first 8 bytes, which begin with the destination address, are
 * read: in place with one load when the frame is one descriptor, gathered when it is a chain of another shape.
 *
 * <p>Each pass handles at most {@code weight} frames and publishes what it used. Only the transmit queue is
 * waited on: receive buffers are only looked for when a frame is to be returned, so receive kicks are not asked
 * for, and a frame that finds no receive buffer is dropped (counted).
 */
final class ReflectorWorker implements PairWork {
    private static final Logger LOG = Logger.getLogger(ReflectorWorker.class.getName());
    private static final int MAX_FRAME = 65536;

    private final int pair;
    private final NetMode.Reflection reflection;
    private final int weight;
    private final NetStats stats = new NetStats();

    // ---- runner-thread state ----
    private final PairQueues queues = new PairQueues();
    /** A transmitted frame, header first, copied out of guest memory. */
    private MemorySegment frame;
    /** Frames popped and touched before any is copied (see {@link #doWork}): where each one is. */
    private static final int BATCH = 16;
    /**
     * Frames after which a pass publishes what it pushed (used.idx, no notification decision: that stays once per
     * pass). The driver can only reuse a buffer it sees used: publishing once per pass of up to {@code weight}
     * frames (256 by default, a whole ring of DPDK's virtio-user) hands the ring back all at once, so the driver
     * waits on a full ring while we drain it and we wait on an empty one while it refills; publishing every 32
     * frames (DPDK's burst) lets both work at once. A publication is a release store (plain on x86), no fence.
     */
    private static final int PUBLISH_EVERY = 32;
    private final MemorySegment[] batchRegion = new MemorySegment[BATCH];
    private final long[] batchOffset = new long[BATCH];
    private final long[] batchLength = new long[BATCH];
    private final int[] batchHead = new int[BATCH];
    /** A dropped frame's destination word ({@link FrameCounts#DESTINATION_WORD}): all a pass reads of it. */
    private final long[] batchDestination = new long[BATCH];
    private long touchSink;
    /** This pass's counts per direction, folded into {@link #stats} at its end. */
    private final FrameCounts txCounts = new FrameCounts();
    private final FrameCounts rxCounts = new FrameCounts();

    ReflectorWorker(int pair, NetMode.Reflection reflection, int weight) {
        this.pair = pair;
        this.reflection = reflection;
        this.weight = weight;
    }

    @Override
    public NetStats stats() {
        return stats;
    }

    @Override
    public void onStart(Arena arena, Epoll epoll) {
        frame = arena.allocate(NetFeatures.HDR_LEN + MAX_FRAME, 64);
    }

    /** The receive queue is never waited on: a frame finding no buffer is dropped. */
    @Override
    public void onAttach(QueueContext q) {
        queues.attach(q);
    }

    @Override
    public void onDetach(QueueContext q) {
        flush(q);
        queues.detach(q);
    }

    @Override
    public void onKick(QueueContext q) {
        queues.kicked(q);
    }

    @Override
    public boolean prepareSleep() {
        if (returnPathStopped()) {
            return true; // nothing to do until the receive ring starts: its attach comes through the mailbox and wakes us
        }
        return queues.txKick.arm(queues.tx);
    }

    /**
     * Frames would go back (macswap, loopback) but the receive ring is stopped (GET_VRING_BASE, or not yet started):
     * none is taken from the transmit ring meanwhile. QEMU stops a pair's rings one at a time, the receive ring first,
     * when it migrates the guest; a frame taken in between could neither go back nor stay, and would be lost (a CI
     * run lost one echo request so, counted received and neither sent nor dropped). Left in the ring, it is served
     * by whichever back-end the rings start on next, this one or the destination. A receive ring started but
     * disabled is another matter: the spec has a disabled ring's transmit frames drained and dropped ({@link #serve}
     * counts them dropped).
     */
    private boolean returnPathStopped() {
        return reflection != NetMode.Reflection.DROP && queues.rx == null;
    }

    @Override
    public void onWake(int events) {
        queues.txKick.disarm(queues.tx);
    }

    @Override
    public void onStop() {
        queues.foldKicks(stats);
        foldCounts();
    }

    /** One bounded pass over the transmit queue; returns the frames handled. */
    @Override
    public int doWork() {
        queues.foldKicks(stats);
        QueueContext t = queues.tx;
        if (t == null || t.queue().isBroken()) {
            foldCounts(); // what a pass cut short by a fault other than VirtqueueException (QueueRunner) had counted
            return 0;
        }
        if (returnPathStopped()) {
            foldCounts();
            return 0;
        }
        DeviceQueue q = t.queue();
        DescriptorChain first;
        try {
            first = q.pop();
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": transmit queue " + t.index() + " broken: " + e.getMessage());
            first = null;
        }
        if (first == null) {
            foldCounts();
            return 0;
        }
        return pass(t, q, first);
    }

    /**
     * A pass that has a frame, {@code first}, just popped from {@code q}. Apart from {@link #doWork} for the JIT: C2
     * weighs a call site by how often it ran per call of the method that holds it, and a polling thread calls doWork
     * far more often on an empty ring than it serves a frame (millions of times while a driver is still starting
     * up); with the frame loop inside doWork, the per-frame calls looked rare there and were left as calls or not,
     * depending on how long the ring had been empty when doWork was compiled (a JIT log showed three
     * DescriptorChain.check calls refused for "low call site frequency"): one candidate for why `serve net` JVMs
     * run at one of two rates. Here every call serves at least one frame.
     */
    private int pass(QueueContext t, DeviceQueue q, DescriptorChain first) {
        // Whether frames go back at all, read once per pass (both flags are volatile, written by the control
        // thread on SET_VRING_ENABLE); a pass is bounded by the weight, so a change is seen a pass later at most.
        QueueContext r = queues.rx;
        boolean back = reflection != NetMode.Reflection.DROP && t.enabled() && r != null && r.enabled();
        int n = 0;
        int unpublished = 0;
        try {
            while (n < weight) {
                // Pop a batch of frames that sit in one readable descriptor each (header and frame together, what
                // every driver here sends), remembering where they are, and touch each frame before copying any:
                // the frames were just written by the driver on the other CPU, so each first read is a cache miss,
                // and touching them all first lets those misses overlap instead of paying one after another
                // (DPDK prefetches for the same reason). A chain of another shape ends the batch and is served
                // after it, from the chain itself, so pushes stay in pop order (IN_ORDER needs that).
                int k = 0;
                DescriptorChain other = null;
                while (k < BATCH && n + k < weight) {
                    DescriptorChain c = first != null ? first : q.pop();
                    first = null;
                    if (c == null) {
                        break;
                    }
                    if (c.count() != 1 || c.readableCount() != 1) {
                        other = c;
                        break;
                    }
                    MemorySegment region = c.region(0);
                    // Stored only when it changes, and never cleared below: a reference store into this long-lived
                    // array runs G1's card-marking post barrier, a StoreLoad fence included, per frame (see
                    // DescriptorChain.add). A stale entry past the batch's end is never read, and only keeps a
                    // segment object reachable, not its memory mapped.
                    if (batchRegion[k] != region) {
                        batchRegion[k] = region;
                    }
                    batchOffset[k] = c.offset(0);
                    batchLength[k] = c.length(0);
                    batchHead[k] = c.head();
                    k++;
                }
                // A frame that goes back is copied (serve): touch the first byte of its buffer and the last. A
                // dropped one is only counted, and all the count needs of it is its destination word, loaded here
                // once (a chain of another shape gathers it, see destination): DPDK's back-end copies every frame
                // into an mbuf; a sink that reads 8 bytes of it in place need not. A dropped frame's virtio-net
                // header is never read: it is often alone in a cache line the driver wrote, so touching it would be
                // a cross-CPU miss per frame for nothing, taking a fill buffer from the misses that matter and the
                // line from the driver, which writes it again. Inside the buffer whatever its length (each is at
                // least 1 byte; a buffer too short for an Ethernet header is dropped unread).
                if (back) {
                    long touched = 0;
                    for (int i = 0; i < k; i++) {
                        long last = batchLength[i] - 1;
                        touched += batchRegion[i].get(ValueLayout.JAVA_BYTE, batchOffset[i])
                                + batchRegion[i].get(ValueLayout.JAVA_BYTE, batchOffset[i] + last);
                    }
                    touchSink += touched; // kept, so that the loads above are not optimised away
                } else {
                    for (int i = 0; i < k; i++) {
                        batchDestination[i] = batchLength[i] >= NetFeatures.HDR_LEN + NetFeatures.ETH_HEADER
                                ? batchRegion[i].get(FrameCounts.DESTINATION_WORD, batchOffset[i] + NetFeatures.HDR_LEN)
                                : 0;
                    }
                }
                for (int i = 0; i < k; i++) {
                    serve(q, r, back, batchHead[i], batchRegion[i], batchOffset[i], batchLength[i],
                            batchDestination[i], null);
                }
                n += k;
                unpublished += k;
                if (other != null) {
                    serve(q, r, back, other.head(), null, 0, other.readableBytes(), back ? 0 : destination(other),
                            other);
                    n++;
                    unpublished++;
                } else if (k < BATCH) {
                    break; // the ring is empty, or the weight is reached: the flush below publishes
                }
                if (unpublished >= PUBLISH_EVERY) {
                    q.publishUsed();
                    if (back) {
                        publish(r);
                    }
                    unpublished = 0;
                }
            }
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": transmit queue " + t.index() + " broken: " + e.getMessage());
        }
        if (n > 0) {
            flush(t);
            flush(queues.rx);
        }
        foldCounts();
        return n;
    }

    /** Publishes what was pushed on the receive queue {@code r}, unless it is broken (then nothing more is). */
    private void publish(QueueContext r) {
        if (r.queue().isBroken()) {
            return;
        }
        try {
            r.queue().publishUsed();
        } catch (VirtqueueException e) { // a dirty log too small for the used ring: the queue broke on it
            LOG.warning("queue pair " + pair + ": receive queue " + r.index() + " broken: " + e.getMessage());
        }
    }

    /**
     * Adds the pass's counts to the shared counters: once per pass, not per frame. Also after a pass that a
     * VirtqueueException cut short (caught above), and, for a pass any other fault cut short (it leaves doWork and
     * QueueRunner breaks the queues), at the next pass's early return or at onStop: every frame served is counted.
     */
    private void foldCounts() {
        txCounts.foldInto(stats, NetStats.TX);
        rxCounts.foldInto(stats, NetStats.RX);
    }

    /**
     * A dropped frame's destination word, gathered from a chain of any shape (0 when the chain is too short to hold
     * an Ethernet header: such a frame is dropped unread).
     */
    private long destination(DescriptorChain chain) {
        if (chain.readableBytes() < NetFeatures.HDR_LEN + NetFeatures.ETH_HEADER) {
            return 0;
        }
        chain.gather(NetFeatures.HDR_LEN, frame, NetFeatures.HDR_LEN, Long.BYTES);
        return frame.get(FrameCounts.DESTINATION_WORD, NetFeatures.HDR_LEN);
    }

    /**
     * One transmitted frame of {@code total} readable bytes, counted and dropped (its {@code destination} word, read
     * by the caller, is all that is read of it) or copied out of guest memory (from {@code region} at {@code
     * offset} when it is one descriptor, else gathered from {@code chain}), counted and returned; then its buffer is
     * pushed used.
     */
    private void serve(DeviceQueue q, QueueContext r, boolean back, int head, MemorySegment region, long offset,
                       long total, long destination, DescriptorChain chain) {
        long len = total - NetFeatures.HDR_LEN;
        if (len < NetFeatures.ETH_HEADER || len > MAX_FRAME) {
            txCounts.drop();
        } else if (!back) {
            txCounts.good(destination, len, NetStats.sizeBin(len));
            if (reflection != NetMode.Reflection.DROP) {
                txCounts.drop(); // it would have gone back, but a ring of the pair is disabled: drained and dropped
            }
        } else {
            // Copy the frame out before using it, and its header (RxDelivery reads the flags and gso_type): the guest
            // may rewrite its buffer at any moment. Copying a 64-byte frame as two inline halves measured slower than
            // MemorySegment.copy's call into the JDK's copy stub, when rxonly still copied (B/A 0.81 [0.54, 1.22] over
            // 4 JVM pairs, DPDK virtio-user packed in_order=1 64 B, 2026-12-01).
            if (chain == null) {
                MemorySegment.copy(region, offset + NetFeatures.HDR_LEN, frame, NetFeatures.HDR_LEN, len);
                MemorySegment.copy(region, offset, frame, 0, NetFeatures.HDR_LEN);
            } else {
                chain.gather(NetFeatures.HDR_LEN, frame, NetFeatures.HDR_LEN, len);
                chain.gather(0, frame, 0, NetFeatures.HDR_LEN);
            }
            int bin = NetStats.sizeBin(len); // the same frame goes back: one size bin for both directions
            txCounts.good(frame, NetFeatures.HDR_LEN, len, bin);
            if (reflect(r, total)) {
                rxCounts.good(frame, NetFeatures.HDR_LEN, len, bin); // as delivered: MACs swapped when asked
            } else {
                txCounts.drop();
            }
        }
        q.pushUsed(head, 0);
    }

    /**
     * Puts the frame in {@link #frame} on the receive queue, MACs swapped when asked. Returns false when it was not
     * delivered (no receive ring, not enough buffers, or see {@link RxDelivery}).
     */
    private boolean reflect(QueueContext r, long total) {
        if (r.queue().isBroken()) {
            return false;
        }
        if (reflection == NetMode.Reflection.SWAP_MACS) {
            int d = NetFeatures.HDR_LEN;
            for (int i = 0; i < 6; i++) {
                byte b = frame.get(ValueLayout.JAVA_BYTE, d + i);
                frame.set(ValueLayout.JAVA_BYTE, d + i, frame.get(ValueLayout.JAVA_BYTE, d + 6 + i));
                frame.set(ValueLayout.JAVA_BYTE, d + 6 + i, b);
            }
        }
        try {
            return queues.delivery.deliver(frame, total) == RxDelivery.DELIVERED;
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": receive queue " + r.index() + " broken: " + e.getMessage());
            return false;
        }
    }
}
