package io.virtio4j.core.stats;

/**
 * Event counters of one side of one queue. Cheap enough to leave on: plain fields written only by the
 * thread that owns the queue side. Another thread reads them consistently after the owner has stopped
 * (thread join or another happens-before edge), or racily as a progress hint.
 */
public final class QueueCounters {
    /** Buffers added (driver) or popped (device). */
    public long buffers;
    /** Buffers reaped (driver) or pushed used (device). */
    public long completions;
    /** Driver: kicks sent after kickPrepare said one was needed. */
    public long kicksSent;
    /** Driver: kickPrepare calls that found the kick suppressed. */
    public long kicksSuppressed;
    /** Device: used-buffer notifications sent. */
    public long notificationsSent;
    /** Device: used publications whose notification was suppressed. */
    public long notificationsSuppressed;
    /** Shared-memory loads of {@code avail.idx}. */
    public long availIdxReads;
    /** Shared-memory stores of {@code avail.idx}. */
    public long availIdxWrites;
    /**
     * Driver, split rings: shared-memory stores of {@code avail.ring} entries (by adding a buffer and by re-offering
     * the ones in flight). Beside {@link #availIdxWrites} the driver-side mechanism figure of IN_ORDER, under which
     * an entry equal to the one the ring holds is not stored again. Packed rings have no avail ring (the driver
     * writes descriptors in place, every one every time): always 0 there.
     */
    public long availEntryWrites;
    /** Shared-memory loads of {@code used.idx}. */
    public long usedIdxReads;
    /** Shared-memory stores of {@code used.idx}. */
    public long usedIdxWrites;
    /** Wake-ups after which there was no work. */
    public long spuriousWakeups;
    /** Calls that enabled notifications (kicks on the device side, used-buffer notifications on the driver side). */
    public long enableCalls;
    /** Calls that disabled notifications. */
    public long disableCalls;
    /** Ring violations detected. */
    public long errors;
    /**
     * Full fences taken because the queue's ordering is STRONG, at the points where WEAK relies on a release
     * store or an acquire load alone (always 0 under WEAK). The store-&gt;load fences both orderings take are not
     * counted: they are not a choice.
     */
    public long strongFences;

    public void reset() {
        buffers = completions = kicksSent = kicksSuppressed = notificationsSent = notificationsSuppressed = 0;
        availIdxReads = availIdxWrites = availEntryWrites = usedIdxReads = usedIdxWrites = 0;
        spuriousWakeups = enableCalls = disableCalls = errors = strongFences = 0;
    }

    /**
     * What was counted since {@code earlier}, a {@link #copy()} of these counters taken before: for figures over a
     * window of a queue's life (a measuring window after a warm-up).
     */
    public QueueCounters minus(QueueCounters earlier) {
        QueueCounters d = new QueueCounters();
        d.buffers = buffers - earlier.buffers;
        d.completions = completions - earlier.completions;
        d.kicksSent = kicksSent - earlier.kicksSent;
        d.kicksSuppressed = kicksSuppressed - earlier.kicksSuppressed;
        d.notificationsSent = notificationsSent - earlier.notificationsSent;
        d.notificationsSuppressed = notificationsSuppressed - earlier.notificationsSuppressed;
        d.availIdxReads = availIdxReads - earlier.availIdxReads;
        d.availIdxWrites = availIdxWrites - earlier.availIdxWrites;
        d.availEntryWrites = availEntryWrites - earlier.availEntryWrites;
        d.usedIdxReads = usedIdxReads - earlier.usedIdxReads;
        d.usedIdxWrites = usedIdxWrites - earlier.usedIdxWrites;
        d.spuriousWakeups = spuriousWakeups - earlier.spuriousWakeups;
        d.enableCalls = enableCalls - earlier.enableCalls;
        d.disableCalls = disableCalls - earlier.disableCalls;
        d.errors = errors - earlier.errors;
        d.strongFences = strongFences - earlier.strongFences;
        return d;
    }

    /** These counters as they are now (read by the thread that owns them). */
    public QueueCounters copy() {
        return minus(new QueueCounters());
    }

    @Override
    public String toString() {
        return "buffers=" + buffers + " completions=" + completions
                + " kicks=" + kicksSent + "/" + kicksSuppressed + "suppressed"
                + " notifications=" + notificationsSent + "/" + notificationsSuppressed + "suppressed"
                + " availIdx r/w=" + availIdxReads + "/" + availIdxWrites + " availEntry w=" + availEntryWrites
                + " usedIdx r/w=" + usedIdxReads + "/" + usedIdxWrites
                + " spurious=" + spuriousWakeups + " enable/disable=" + enableCalls + "/" + disableCalls
                + " errors=" + errors + " strongFences=" + strongFences;
    }
}
