package io.virtio4j.core.error;

/**
 * Under VIRTIO_F_IN_ORDER, a used entry whose id completes more buffers (every one in flight up to it) than
 * used.idx advanced by.
 */
public final class UsedBatchTooLongException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public UsedBatchTooLongException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
