package io.virtio4j.core.error;

/** A head index or a next index points outside the descriptor table it indexes. */
public final class InvalidDescriptorIndexException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public InvalidDescriptorIndexException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
