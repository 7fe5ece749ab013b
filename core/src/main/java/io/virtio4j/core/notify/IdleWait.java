package io.virtio4j.core.notify;

import io.virtio4j.core.policy.NotificationMode;

/**
 * What a ring side does when it found no work: in POLL mode spin, in NOTIFY mode go to sleep (arm
 * notifications, re-check, wait), in HYBRID mode spin for a bounded time and then sleep. One instance per
 * thread; not thread-safe.
 */
public final class IdleWait {
    private final NotificationMode mode;
    private final long spinNanos;
    private long idleSince;

    public IdleWait(NotificationMode mode, long hybridSpinNanos) {
        this.mode = mode;
        this.spinNanos = hybridSpinNanos;
    }

    /**
     * Called each time the side found nothing to do. Returns true after spinning once (call again when there
     * is still nothing to do); false when it is time to arm notifications and sleep.
     */
    public boolean spin() {
        switch (mode) {
            case POLL -> {
                Thread.onSpinWait();
                return true;
            }
            case NOTIFY -> {
                return false;
            }
            default -> {
                long now = System.nanoTime();
                if (idleSince == 0) {
                    idleSince = now;
                }
                if (now - idleSince < spinNanos) {
                    Thread.onSpinWait();
                    return true;
                }
                idleSince = 0;
                return false;
            }
        }
    }

    /** Called when the side found work: a later idle period spins afresh. */
    public void busy() {
        idleSince = 0;
    }
}
