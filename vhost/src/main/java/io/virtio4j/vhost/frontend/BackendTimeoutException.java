package io.virtio4j.vhost.frontend;

/**
 * The back-end did not do its part in time: none connected to a listening {@link FrontendSession}, or one did not
 * answer a request within the reply patience ({@link VhostUserFrontend#replyPatience(java.time.Duration)}).
 */
public final class BackendTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BackendTimeoutException(String message) {
        super(message);
    }
}
