package io.virtio4j.devices.net.driver;

/** The back-end does not offer what the driver's {@link NetDriver.Config} needs: feature bits or queue pairs. */
public final class NegotiationFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NegotiationFailedException(String what, long missingBits) {
        super("back-end does not offer " + what + " 0x" + Long.toHexString(missingBits));
    }

    NegotiationFailedException(String what) {
        super("back-end does not offer " + what);
    }
}
