package io.virtio4j.devices.blk;

/**
 * Counters of one request queue, written by its queue thread only (once per pass, from plain fields, so the
 * per-request path does no volatile store) and read by the statistics printer (racy but monotonic reads are fine for
 * a progress line; the final summary is read after the thread stops).
 *
 * <p>Every request popped is counted once in {@link #requests()} and ends as exactly one of: completed with OK, an
 * I/O error of the backing store ({@link #ioErrors()}), refused as invalid with IOERR ({@link #invalid()}), refused
 * as unsupported with UNSUPP ({@link #unsupported()}), or unanswerable ({@link #malformed()}: no writable byte for
 * its status; pushed back used with length 0).
 */
public final class BlkStats {
    volatile long requests;
    volatile long reads;
    volatile long writes;
    volatile long flushes;
    volatile long discards;
    volatile long writeZeroes;
    volatile long getIds;
    volatile long bytesRead;
    volatile long bytesWritten;
    /** Durability flushes after writes in writethrough mode (not counted in {@link #flushes}). */
    volatile long writeThroughSyncs;
    volatile long ioErrors;
    volatile long invalid;
    volatile long unsupported;
    volatile long malformed;
    volatile long kicks;
    volatile long notifications;

    public long requests() {
        return requests;
    }

    public long reads() {
        return reads;
    }

    public long writes() {
        return writes;
    }

    public long flushes() {
        return flushes;
    }

    public long discards() {
        return discards;
    }

    public long writeZeroes() {
        return writeZeroes;
    }

    public long getIds() {
        return getIds;
    }

    public long bytesRead() {
        return bytesRead;
    }

    public long bytesWritten() {
        return bytesWritten;
    }

    public long writeThroughSyncs() {
        return writeThroughSyncs;
    }

    /** Requests the backing store failed (a negative errno from the engine): answered IOERR. */
    public long ioErrors() {
        return ioErrors;
    }

    /** Requests refused before any I/O, for breaking a rule of the request format: answered IOERR. */
    public long invalid() {
        return invalid;
    }

    /** Requests of a type or with flags the device does not do: answered UNSUPP. */
    public long unsupported() {
        return unsupported;
    }

    /** Requests with no writable byte for the status: pushed used with length 0, unanswered. */
    public long malformed() {
        return malformed;
    }

    public long kicks() {
        return kicks;
    }

    public long notifications() {
        return notifications;
    }

    /** A new object holding this plus {@code other} (null counts as zero). */
    public BlkStats plus(BlkStats other) {
        BlkStats s = new BlkStats();
        s.add(this);
        if (other != null) {
            s.add(other);
        }
        return s;
    }

    private void add(BlkStats x) {
        requests += x.requests;
        reads += x.reads;
        writes += x.writes;
        flushes += x.flushes;
        discards += x.discards;
        writeZeroes += x.writeZeroes;
        getIds += x.getIds;
        bytesRead += x.bytesRead;
        bytesWritten += x.bytesWritten;
        writeThroughSyncs += x.writeThroughSyncs;
        ioErrors += x.ioErrors;
        invalid += x.invalid;
        unsupported += x.unsupported;
        malformed += x.malformed;
        kicks += x.kicks;
        notifications += x.notifications;
    }

    /** Every counter as key=value, for logs and progress lines. */
    @Override
    public String toString() {
        return "requests=" + requests + " reads=" + reads + " writes=" + writes + " flushes=" + flushes
                + " discards=" + discards + " write-zeroes=" + writeZeroes + " get-ids=" + getIds
                + " | bytes read=" + bytesRead + " written=" + bytesWritten + " writethrough-syncs=" + writeThroughSyncs
                + " | io-errors=" + ioErrors + " invalid=" + invalid + " unsupported=" + unsupported
                + " malformed=" + malformed + " | kicks=" + kicks + " notifications=" + notifications;
    }
}
