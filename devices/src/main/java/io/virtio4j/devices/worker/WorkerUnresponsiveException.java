package io.virtio4j.devices.worker;

/**
 * The worker thread is alive but did not answer a request within the time allowed (a pass, or the request itself,
 * that does not end), now or earlier. A request it had not taken yet was withdrawn and will not run; one it had
 * taken may still be running. Either way the runner serves nothing more (see {@link QueueRunner}).
 */
public final class WorkerUnresponsiveException extends WorkerException {
    private static final long serialVersionUID = 1L;

    WorkerUnresponsiveException(String message, Throwable cause) {
        super(message, cause);
    }
}
