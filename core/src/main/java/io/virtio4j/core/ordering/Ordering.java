package io.virtio4j.core.ordering;

/**
 * Barrier strength of one queue, chosen at run time.
 *
 * <p>The store-&gt;load points (publish an index, then read the other side's suppression state; re-enable
 * notifications, then re-read the index) take a full fence in both modes ({@link Fences#storeLoad()}): without
 * it the lost-notification race is real even on x86. The modes differ at the publication points:
 * <ul>
 *   <li>{@link #WEAK}: SMP-style ordering for a software peer. Publication is a release store of the index,
 *       observation an acquire load; no fence instruction is needed on x86.</li>
 *   <li>{@link #STRONG}: a full fence at every barrier point, the analogue of the mandatory barriers a driver
 *       must use towards a hardware-like peer; selected automatically when VIRTIO_F_ORDER_PLATFORM is
 *       negotiated.</li>
 * </ul>
 */
public enum Ordering {
    WEAK,
    STRONG
}
