package io.virtio4j.devices.blk;

import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockIo;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.devices.worker.KickSwitch;
import io.virtio4j.devices.worker.QueueRunner;
import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.os.Epoll;
import io.virtio4j.os.EventFd;
import io.virtio4j.vhost.backend.QueueContext;

import java.lang.foreign.Arena;

/**
 * The work of one virtio-blk request queue on its {@link QueueRunner}: opens the queue's own engine over the shared
 * store when the thread starts (its completion eventfd, if it has one, joins the runner's epoll set), and serves the
 * attached queue through {@link BlkRequests}. On detach every operation in flight is waited for and completed.
 */
final class BlkWorker implements QueueWorker {
    private static final long COMPLETIONS = QueueRunner.DEVICE_TOKENS;

    private final int index;
    private final BlockStore store;
    private final BlockEngine engine;
    private final int depth;
    private final int weight;
    private final WriteCache cache;
    private final byte[] id;
    private final BlkStats stats = new BlkStats();
    private final KickSwitch kick = new KickSwitch();

    // ---- runner-thread state ----
    private BlockIo io;
    private EventFd completions;
    private BlkRequests requests;
    private QueueContext queue;
    private long kicks;

    BlkWorker(int index, BlockStore store, BlockEngine engine, int depth, int weight, WriteCache cache, byte[] id) {
        this.index = index;
        this.store = store;
        this.engine = engine;
        this.depth = depth;
        this.weight = weight;
        this.cache = cache;
        this.id = id;
    }

    BlkStats stats() {
        return stats;
    }

    @Override
    public void onStart(Arena arena, Epoll epoll) {
        io = engine.open(store, depth);
        completions = io.completionFd();
        if (completions != null) {
            epoll.add(completions.fileDescriptor(), Epoll.EPOLLIN, COMPLETIONS);
        }
        requests = new BlkRequests(index, arena, io, cache, store.readOnly(), store.size(), store.blockSize(), id, stats);
    }

    @Override
    public void onAttach(QueueContext q) {
        queue = q;
        kick.attached(q);
        // the test-only switch (see BlkDevice.DEBUG_SKIP_READ_DATA_LOG) is read here, off the hot path
        requests.attach(q.queue(), q.features(),
                Boolean.getBoolean(BlkDevice.DEBUG_SKIP_READ_DATA_LOG) ? null : q.dirtyLog(), q.memory());
    }

    @Override
    public void onDetach(QueueContext q) {
        requests.drain();
        requests.detach();
        kick.reset();
        queue = null;
    }

    @Override
    public int doWork() {
        if (kicks != 0) {
            stats.add(BlkStats.KICKS, kicks);
            kicks = 0;
        }
        // A disabled ring (SET_VRING_ENABLE 0) is not taken from; what it has in flight still completes. The flag is
        // volatile, written by the control thread: read once per pass.
        QueueContext q = queue;
        return requests.pass(q != null && q.enabled() ? weight : 0);
    }

    /**
     * Arms the queue's kick only while a request could be taken: with every slot busy a kick would wake the thread
     * to find the ring non-empty and nothing to do (a spin). Completions wake it then, through the engine's eventfd.
     * A disabled ring is not armed either: its requests wait for the enable, seen by the pass after the runner's
     * bounded sleep.
     */
    @Override
    public boolean prepareSleep() {
        if (queue == null || !queue.enabled() || !requests.hasFreeSlot()) {
            return true;
        }
        return kick.arm(queue);
    }

    @Override
    public void onWake(int events) {
        kick.disarm(queue);
    }

    @Override
    public void onKick(QueueContext q) {
        kicks++;
    }

    @Override
    public void onEvent(long token, int events) {
        if (token == COMPLETIONS) {
            completions.tryRead(); // the next pass reaps what finished
        }
    }

    /**
     * A queue still attached (the runner closed under it, or a death: the queue is broken then and nothing is
     * answered) is drained first, so its requests in flight finish and are answered; then the engine closes, which
     * waits for whatever is still in flight before its memory goes.
     */
    @Override
    public void onStop() {
        try {
            if (requests != null && queue != null) {
                requests.drain();
                requests.detach();
                queue = null;
            }
        } finally {
            if (io != null) {
                io.close();
            }
        }
    }
}
