package io.virtio4j.vhost.frontend;

/** The back-end refused a request (a non-zero REPLY_ACK) or answered it wrongly. */
public final class VhostUserRequestFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public VhostUserRequestFailedException(String message) {
        super(message);
    }

    public VhostUserRequestFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
