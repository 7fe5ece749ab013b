package io.virtio4j.core.error;

/**
 * The driver broke VIRTIO_F_IN_ORDER: a head that is not the descriptor after the previous chain's last, or a
 * chain link that is not the next descriptor in table order.
 */
public final class InOrderViolationException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public InOrderViolationException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
