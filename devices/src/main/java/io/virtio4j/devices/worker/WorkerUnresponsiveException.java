package io.virtio4j.devices.worker;

/**
 * The worker thread is alive but did not answer a request within the time allowed (a pass, or the request itself,
 * that does not end). A request it had not taken yet was withdrawn and will not run; one it had taken may still be
 * running.
 */
public final class WorkerUnresponsiveException extends WorkerException {
    private static final long serialVersionUID = 1L;

    WorkerUnresponsiveException(String worker, long millis) {
        super(worker + " did not answer within " + millis + " ms", null);
    }
}
