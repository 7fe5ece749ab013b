package io.virtio4j.vhost.frontend;

/** No back-end connected to a listening {@link FrontendSession} within the patience given. */
public final class BackendTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BackendTimeoutException(String message) {
        super(message);
    }
}
