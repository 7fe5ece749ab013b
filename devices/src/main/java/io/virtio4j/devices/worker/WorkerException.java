package io.virtio4j.devices.worker;

/** The control thread could not get a queue worker to do something: it died, or it did not answer in time. */
public abstract sealed class WorkerException extends RuntimeException
        permits WorkerDeadException, WorkerUnresponsiveException {
    private static final long serialVersionUID = 1L;

    WorkerException(String message, Throwable cause) {
        super(message, cause);
    }
}
