package io.virtio4j.devices.net;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.SplitDeviceQueue;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.os.Affinity;
import io.virtio4j.os.Epoll;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.LinuxException;
import io.virtio4j.vhost.backend.QueueContext;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.logging.Logger;

/**
 * The thread that serves one receive/transmit queue pair. Frames the guest transmits are taken from the
 * transmit queue, copied out of guest memory (the guest may change them under us), counted, and dropped or
 * returned on the receive queue according to the {@link NetMode}.
 *
 * <p>Queues are attached and detached through a mailbox the worker drains between rounds, so the worker is
 * the only thread that ever touches a started queue and detaching returns only once it no longer does.
 *
 * <p>Each round handles at most {@code weight} frames, then publishes used elements and looks at the mailbox,
 * so a busy queue cannot starve the control path.
 */
final class QueuePairWorker implements Runnable, PairWorker {
    private static final Logger LOG = Logger.getLogger(QueuePairWorker.class.getName());
    private static final int MAX_FRAME = 65536;
    private static final long WAKE = -1;
    private static final int WAIT_MILLIS = 200;

    private final int pair;
    private final NetMode mode;
    private final NotificationMode notification;
    private final long hybridSpinNanos;
    private final int weight;
    private final int cpu;
    private final boolean mergeable;
    private final NetStats stats = new NetStats();
    private final WorkerMailbox mailbox;
    private final Thread thread;
    private volatile boolean shutdown;

    // worker-thread state
    private QueueContext rx;
    private QueueContext tx;
    private Epoll epoll;
    private MemorySegment frame;

    QueuePairWorker(int pair, NetMode mode, NotificationMode notification, long hybridSpinNanos, int weight, int cpu,
                    boolean mergeable) {
        this.pair = pair;
        this.mode = mode;
        this.notification = notification;
        this.hybridSpinNanos = hybridSpinNanos;
        this.weight = weight;
        this.cpu = cpu;
        this.mergeable = mergeable;
        this.mailbox = new WorkerMailbox("queue pair " + pair + " worker");
        this.thread = new Thread(this, "virtio4j-net-pair" + pair);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    @Override
    public NetStats stats() {
        return stats;
    }

    @Override
    public long threadId() {
        return thread.threadId();
    }


    @Override
    public void attach(boolean receive, QueueContext q) {
        mailbox.runOnWorker(() -> {
            if (receive) {
                rx = q;
            } else {
                tx = q;
                watch(q, true);
                // A kick that came before the ring started is not lost: the first round looks at the ring anyway.
            }
        });
    }

    @Override
    public void detach(boolean receive) {
        mailbox.runOnWorker(() -> {
            if (receive) {
                flush(rx);
                rx = null;
            } else {
                flush(tx);
                watch(tx, false);
                tx = null;
            }
        });
    }

    @Override
    public void shutdown() {
        shutdown = true;
        mailbox.closeAfter(thread);
    }

    private void watch(QueueContext q, boolean on) {
        if (q == null || q.kick() == null) {
            return;
        }
        if (on) {
            epoll.add(q.kick().fileDescriptor(), Epoll.EPOLLIN, q.index());
        } else {
            epoll.delete(q.kick().fileDescriptor());
        }
    }

    @Override
    public void run() {
        if (cpu >= 0) {
            try {
                Affinity.pinCurrentThread(cpu);
            } catch (LinuxException | IllegalArgumentException e) {
                LOG.warning("queue pair " + pair + " not pinned to CPU " + cpu + ": " + e.getMessage());
            }
        }
        try (Arena arena = Arena.ofConfined(); Epoll ep = Epoll.create(4)) {
            epoll = ep;
            frame = arena.allocate(MAX_FRAME + NetFeatures.HDR_LEN, 64);
            epoll.add(mailbox.wakeFd().fileDescriptor(), Epoll.EPOLLIN, WAKE);
            loop();
        } catch (Throwable t) {
            LOG.severe("queue pair " + pair + " worker died: " + t);
        }
    }

    private void loop() {
        long idleSince = 0;
        boolean kicksArmed = false;
        while (!shutdown) {
            if (mailbox.drain()) {
                kicksArmed = false;
            }
            int done = round();
            if (done > 0) {
                idleSince = 0;
                continue;
            }
            if (tx == null || tx.kick() == null || notification == NotificationMode.POLL) {
                if (tx == null) {
                    sleepOnEpoll();
                } else {
                    Thread.onSpinWait();
                }
                continue;
            }
            if (notification == NotificationMode.HYBRID) {
                long now = System.nanoTime();
                if (idleSince == 0) {
                    idleSince = now;
                }
                if (now - idleSince < hybridSpinNanos) {
                    Thread.onSpinWait();
                    continue;
                }
            }
            SplitDeviceQueue q = tx.queue();
            if (q.isBroken()) {
                sleepOnEpoll();
                continue;
            }
            if (!kicksArmed) {
                if (q.enableKicksOrFindPending()) {
                    continue; // frames arrived while we armed: serve them
                }
                kicksArmed = true;
            }
            sleepOnEpoll();
            q.disableKicks();
            kicksArmed = false;
            idleSince = 0;
        }
    }

    private void sleepOnEpoll() {
        int n = epoll.await(WAIT_MILLIS);
        for (int i = 0; i < n; i++) {
            long data = epoll.data(i);
            if (data == WAKE) {
                mailbox.clearWake();
            } else if (tx != null && tx.kick() != null && data == tx.index()) {
                if (tx.kick().tryRead() != 0) {
                    stats.kicks++;
                }
            }
        }
    }

    /** One bounded round over the transmit queue; returns the frames handled. */
    private int round() {
        QueueContext t = tx;
        if (t == null || t.queue().isBroken()) {
            return 0;
        }
        SplitDeviceQueue q = t.queue();
        int n = 0;
        long packets = 0;
        long bytes = 0;
        long drops = 0;
        long delivered = 0;
        long deliveredBytes = 0;
        try {
            DescriptorChain c;
            while (n < weight && (c = q.pop()) != null) {
                n++;
                long len = c.readableBytes() - NetFeatures.HDR_LEN;
                int head = c.head();
                if (len < NetFeatures.ETH_HEADER || len > MAX_FRAME) {
                    drops++;
                } else {
                    // Copy the frame out before using it: the guest may rewrite its buffer at any moment.
                    c.gather(NetFeatures.HDR_LEN, frame, 0, len);
                    packets++;
                    bytes += len;
                    if (mode != NetMode.RXONLY && t.enabled()) {
                        if (deliver(len)) {
                            delivered++;
                            deliveredBytes += len;
                        } else {
                            drops++;
                        }
                    }
                }
                q.pushUsed(head, 0);
            }
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": transmit queue " + t.index() + " broken: " + e.getMessage());
        }
        if (n > 0) {
            flush(t);
            flush(rx);
            stats.fromGuestPackets += packets;
            stats.fromGuestBytes += bytes;
            stats.fromGuestDrops += drops;
            stats.toGuestPackets += delivered;
            stats.toGuestBytes += deliveredBytes;
        }
        return n;
    }

    /**
     * Puts the frame in {@link #frame} on the receive queue, MACs swapped in MACSWAP mode, spreading it over
     * several receive buffers when merged buffers were negotiated. Returns false when the guest has not posted
     * enough receive buffers (the frame is dropped, nothing taken).
     */
    private boolean deliver(long len) {
        QueueContext r = rx;
        if (r == null || !r.enabled() || r.queue().isBroken()) {
            return false;
        }
        if (mode == NetMode.MACSWAP) {
            for (int i = 0; i < 6; i++) {
                byte d = frame.get(ValueLayout.JAVA_BYTE, i);
                frame.set(ValueLayout.JAVA_BYTE, i, frame.get(ValueLayout.JAVA_BYTE, 6 + i));
                frame.set(ValueLayout.JAVA_BYTE, 6 + i, d);
            }
        }
        SplitDeviceQueue q = r.queue();
        try {
            return mergeable ? deliverMerged(q, len) : deliverSingle(q, len);
        } catch (VirtqueueException e) {
            LOG.warning("queue pair " + pair + ": receive queue " + r.index() + " broken: " + e.getMessage());
            return false;
        }
    }

    private boolean deliverSingle(SplitDeviceQueue q, long len) {
        DescriptorChain c = q.pop();
        if (c == null) {
            return false;
        }
        if (c.writableBytes() < NetFeatures.HDR_LEN + len) {
            q.pushUsed(c.head(), 0); // too small for the frame and no merging: the buffer comes back empty
            return false;
        }
        writeHeader(c, 1);
        c.scatter(NetFeatures.HDR_LEN, frame, 0, len);
        q.pushUsed(c.head(), NetFeatures.HDR_LEN + len);
        return true;
    }

    /**
     * Merged receive buffers: first take chains until their writable room holds header and frame (giving them
     * all back when the guest has not posted enough), then take the same chains again and fill them, now that
     * num_buffers is known. The header may span descriptors, so it goes through scatter like the frame.
     */
    private boolean deliverMerged(SplitDeviceQueue q, long len) {
        long need = NetFeatures.HDR_LEN + len;
        long room = 0;
        int k = 0;
        while (room < need) {
            DescriptorChain c = k < mergedHeads.length ? q.pop() : null;
            if (c == null) {
                for (int i = k - 1; i >= 0; i--) {
                    q.unpop(mergedHeads[i]);
                }
                return false;
            }
            mergedHeads[k++] = c.head();
            room += c.writableBytes();
        }
        for (int i = k - 1; i >= 0; i--) {
            q.unpop(mergedHeads[i]);
        }
        long copied = 0;
        for (int i = 0; i < k; i++) {
            DescriptorChain c = q.pop();
            long skip = 0;
            if (i == 0) {
                writeHeader(c, k);
                skip = NetFeatures.HDR_LEN;
            }
            long n = c.scatter(skip, frame, copied, len - copied);
            copied += n;
            q.pushUsed(c.head(), skip + n);
        }
        return true;
    }

    private final int[] mergedHeads = new int[64];
    private final MemorySegment header = Arena.ofAuto().allocate(NetFeatures.HDR_LEN, 8);

    private void writeHeader(DescriptorChain c, int numBuffers) {
        header.fill((byte) 0);
        header.set(LE_SHORT, NetFeatures.HDR_NUM_BUFFERS, (short) numBuffers);
        c.scatter(0, header, 0, NetFeatures.HDR_LEN);
    }

    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    private void flush(QueueContext q) {
        if (q != null && !q.queue().isBroken() && q.queue().flushUsed()) {
            stats.notifications++;
        }
    }
}
