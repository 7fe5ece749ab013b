package io.virtio4j.vhost.frontend;

/** The back-end does not offer what a driver needs: virtio or protocol feature bits, or queues. */
public final class NegotiationFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public NegotiationFailedException(String what, long missingBits) {
        super("back-end does not offer " + what + " 0x" + Long.toHexString(missingBits));
    }

    public NegotiationFailedException(String what) {
        super("back-end does not offer " + what);
    }
}
