package io.virtio4j.core.error;

/** An INDIRECT descriptor on a queue that did not negotiate VIRTIO_F_INDIRECT_DESC. */
public final class IndirectNotNegotiatedException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public IndirectNotNegotiatedException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
