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
        availIdxReads = availIdxWrites = usedIdxReads = usedIdxWrites = 0;
        spuriousWakeups = enableCalls = disableCalls = errors = strongFences = 0;
    }

    @Override
    public String toString() {
        return "buffers=" + buffers + " completions=" + completions
                + " kicks=" + kicksSent + "/" + kicksSuppressed + "suppressed"
                + " notifications=" + notificationsSent + "/" + notificationsSuppressed + "suppressed"
                + " availIdx r/w=" + availIdxReads + "/" + availIdxWrites
                + " usedIdx r/w=" + usedIdxReads + "/" + usedIdxWrites
                + " spurious=" + spuriousWakeups + " enable/disable=" + enableCalls + "/" + disableCalls
                + " errors=" + errors + " strongFences=" + strongFences;
    }
}
