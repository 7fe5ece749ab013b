package io.virtio4j.devices.worker;

/** The worker thread ended with a throwable (its cause) and serves nothing any more. */
public final class WorkerDeadException extends WorkerException {
    private static final long serialVersionUID = 1L;

    WorkerDeadException(String worker, Throwable cause) {
        super(worker + " is dead: " + cause, cause);
    }
}
