package io.virtio4j.core.error;

/** Root of every error the ring engine raises. */
public abstract class VirtqueueException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected VirtqueueException(String message) {
        super(message);
    }

    protected VirtqueueException(String message, Throwable cause) {
        super(message, cause);
    }
}
