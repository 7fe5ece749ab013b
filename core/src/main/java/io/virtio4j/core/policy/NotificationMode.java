package io.virtio4j.core.policy;

/** How a side waits for the other: by sleeping on notifications, by spinning, or spinning then sleeping. */
public enum NotificationMode {
    /** Arm notifications and sleep whenever there is no work; the peer's notification wakes us. */
    NOTIFY,
    /** Never arm notifications; spin on the ring index. Needs a CPU of its own. */
    POLL,
    /** Spin for a bounded time, then arm notifications and sleep. */
    HYBRID
}
