package io.virtio4j.devices.worker;

/**
 * The worker thread is alive but did not take a request within the time allowed (a pass that never ends); the
 * request was withdrawn and will not run.
 */
public final class WorkerUnresponsiveException extends WorkerException {
    private static final long serialVersionUID = 1L;

    WorkerUnresponsiveException(String worker, long millis) {
        super(worker + " did not answer within " + millis + " ms", null);
    }
}
