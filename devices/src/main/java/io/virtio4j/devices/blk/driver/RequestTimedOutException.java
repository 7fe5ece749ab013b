package io.virtio4j.devices.blk.driver;

/** {@link BlkDriver#run} waited its whole time-out and the request did not complete (it stays in flight). */
public final class RequestTimedOutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RequestTimedOutException(int queue, int slot, long timeoutNanos) {
        super("virtio-blk queue " + queue + ", slot " + slot + ": no completion within " + timeoutNanos / 1_000_000
                + " ms");
    }
}
