package io.virtio4j.devices.blk;

import io.virtio4j.devices.metrics.Counters;
import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.devices.metrics.QueueMetrics;

/**
 * Counters of one request queue, written by its queue thread only (once per pass, from the pass's plain counts, so the
 * per-request path does no shared store) and read by the statistics printer and the metrics scraper at any time (see
 * {@link Counters} for why opaque accesses are enough).
 *
 * <p>Every request popped is counted once in {@link #requests()} and once by what it turned out to be: a read, write,
 * flush, discard, write-zeroes or get-id that was started (or answered OK at once: a transfer of no data, a GET_ID),
 * or refused before any I/O: invalid ({@link #invalid()}: IOERR), unsupported ({@link #unsupported()}: UNSUPP) or
 * unanswerable ({@link #malformed()}: no writable byte for its status; pushed back used with length 0). A started
 * request may still end in an I/O error of the backing store ({@link #ioErrors()}: IOERR).
 *
 * <p>Per queue in DPDK's vocabulary: guest notifications sent and suppressed, and {@code inflight_submitted} /
 * {@code inflight_completed}: operations handed to the queue's I/O engine and reaped from it (a write-through write is
 * two: the write and its flush), so their difference is what the engine holds now.
 */
public final class BlkStats {
    static final int REQUESTS = 0;
    static final int READS = 1;
    static final int WRITES = 2;
    static final int FLUSHES = 3;
    static final int DISCARDS = 4;
    static final int WRITE_ZEROES = 5;
    static final int GET_IDS = 6;
    static final int BYTES_READ = 7;
    static final int BYTES_WRITTEN = 8;
    static final int WRITE_THROUGH_SYNCS = 9;
    static final int IO_ERRORS = 10;
    static final int INVALID = 11;
    static final int UNSUPPORTED = 12;
    static final int MALFORMED = 13;
    static final int KICKS = 14;
    static final int NOTIFICATIONS = 15;
    static final int SUPPRESSED = 16;
    static final int SUBMITTED = 17;
    static final int COMPLETED = 18;
    private static final int COUNT = 19;

    private final Counters c = new Counters(COUNT);

    /** Written by the queue's thread only. */
    void add(int counter, long delta) {
        c.add(counter, delta);
    }

    public long requests() {
        return c.get(REQUESTS);
    }

    public long reads() {
        return c.get(READS);
    }

    public long writes() {
        return c.get(WRITES);
    }

    public long flushes() {
        return c.get(FLUSHES);
    }

    public long discards() {
        return c.get(DISCARDS);
    }

    public long writeZeroes() {
        return c.get(WRITE_ZEROES);
    }

    public long getIds() {
        return c.get(GET_IDS);
    }

    public long bytesRead() {
        return c.get(BYTES_READ);
    }

    public long bytesWritten() {
        return c.get(BYTES_WRITTEN);
    }

    /** Durability flushes after writes in writethrough mode (not counted in {@link #flushes}). */
    public long writeThroughSyncs() {
        return c.get(WRITE_THROUGH_SYNCS);
    }

    /** Requests the backing store failed (a negative errno from the engine): answered IOERR. */
    public long ioErrors() {
        return c.get(IO_ERRORS);
    }

    /** Requests refused before any I/O, for breaking a rule of the request format: answered IOERR. */
    public long invalid() {
        return c.get(INVALID);
    }

    /** Requests of a type or with flags the device does not do: answered UNSUPP. */
    public long unsupported() {
        return c.get(UNSUPPORTED);
    }

    /** Requests with no writable byte for the status: pushed used with length 0, unanswered. */
    public long malformed() {
        return c.get(MALFORMED);
    }

    public long kicks() {
        return c.get(KICKS);
    }

    public long notifications() {
        return c.get(NOTIFICATIONS);
    }

    /** Publications after which the driver wanted no notification. */
    public long notificationsSuppressed() {
        return c.get(SUPPRESSED);
    }

    /** Operations handed to the I/O engine. */
    public long inflightSubmitted() {
        return c.get(SUBMITTED);
    }

    /** Operations the I/O engine finished. */
    public long inflightCompleted() {
        return c.get(COMPLETED);
    }

    /** A new object holding this plus {@code other} (null counts as zero). */
    public BlkStats plus(BlkStats other) {
        BlkStats s = new BlkStats();
        s.c.addAll(c);
        if (other != null) {
            s.c.addAll(other.c);
        }
        return s;
    }

    /**
     * Adds the samples of {@code queues} (queue {@code q}'s statistics at index {@code q}) to {@code out}, labelled
     * {@code device}, {@code queue} and {@code direction="request"}.
     */
    static void collect(PrometheusText out, String device, BlkStats[] queues) {
        QueueMetrics.notificationFamilies(out, queues.length, q -> queues[q].kicks(), q -> queues[q].notifications(),
                q -> queues[q].notificationsSuppressed(), q -> labels(device, q));
        family(out, device, queues, "virtio4j_inflight_submitted_total", "Operations handed to the queue's I/O engine "
                + "(a write-through write is two: the write, then its flush).", SUBMITTED);
        family(out, device, queues, "virtio4j_inflight_completed_total", "Operations the queue's I/O engine finished.",
                COMPLETED);
        PrometheusText.Family requests = out.counter("virtio4j_blk_requests_total", "Requests taken from the queue, by "
                + "what they were (refused: answered IOERR or UNSUPP, or unanswerable, before any I/O).");
        String[] types = {"read", "write", "flush", "discard", "write_zeroes", "get_id"};
        int[] counters = {READS, WRITES, FLUSHES, DISCARDS, WRITE_ZEROES, GET_IDS};
        for (int q = 0; q < queues.length; q++) {
            BlkStats s = queues[q];
            for (int t = 0; t < types.length; t++) {
                requests.sample(s.c.get(counters[t]), labels(device, q, "type", types[t]));
            }
            requests.sample(s.invalid() + s.unsupported() + s.malformed(), labels(device, q, "type", "refused"));
        }
        family(out, device, queues, "virtio4j_blk_read_bytes_total", "Bytes read from the backing store into the "
                + "guest's buffers (requests that completed OK).", BYTES_READ);
        family(out, device, queues, "virtio4j_blk_written_bytes_total", "Bytes written from the guest's buffers to the "
                + "backing store (requests that completed OK).", BYTES_WRITTEN);
        family(out, device, queues, "virtio4j_blk_writethrough_syncs_total", "Flushes after writes in writethrough "
                + "mode (not requests of the guest's).", WRITE_THROUGH_SYNCS);
        PrometheusText.Family errors = out.counter("virtio4j_blk_errors_total", "Requests not answered OK, by the "
                + "status answered (ioerr, unsupp; none: no writable byte to answer in) and why.");
        for (int q = 0; q < queues.length; q++) {
            BlkStats s = queues[q];
            errors.sample(s.ioErrors(), labels(device, q, "status", "ioerr", "cause", "io"));
            errors.sample(s.invalid(), labels(device, q, "status", "ioerr", "cause", "invalid"));
            errors.sample(s.unsupported(), labels(device, q, "status", "unsupp", "cause", "unsupported"));
            errors.sample(s.malformed(), labels(device, q, "status", "none", "cause", "malformed"));
        }
    }

    private static void family(PrometheusText out, String device, BlkStats[] queues, String name, String help,
                               int counter) {
        out.counter(name, help).samples(queues.length, q -> queues[q].c.get(counter), q -> labels(device, q));
    }

    private static String[] labels(String device, int queue, String... more) {
        String[] l = new String[6 + more.length];
        l[0] = "device";
        l[1] = device;
        l[2] = "queue";
        l[3] = Integer.toString(queue);
        l[4] = "direction";
        l[5] = "request";
        System.arraycopy(more, 0, l, 6, more.length);
        return l;
    }

    /** Every counter as key=value, for logs and the line {@code --stats-period} prints. */
    @Override
    public String toString() {
        return "requests=" + requests() + " reads=" + reads() + " writes=" + writes() + " flushes=" + flushes()
                + " discards=" + discards() + " write-zeroes=" + writeZeroes() + " get-ids=" + getIds()
                + " | bytes read=" + bytesRead() + " written=" + bytesWritten()
                + " writethrough-syncs=" + writeThroughSyncs()
                + " | io-errors=" + ioErrors() + " invalid=" + invalid() + " unsupported=" + unsupported()
                + " malformed=" + malformed() + " | kicks=" + kicks() + " notifications=" + notifications()
                + " suppressed=" + notificationsSuppressed()
                + " | inflight submitted=" + inflightSubmitted() + " completed=" + inflightCompleted();
    }
}
