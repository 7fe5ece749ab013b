package io.virtio4j.cli;

/**
 * {@code drive blk}: requests were in flight on a queue and none completed within the stall time-out: the back-end
 * stopped serving the queue, or lost them. The run ends with an I/O error instead of waiting for ever.
 */
final class RequestsStalledException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RequestsStalledException(int queue, int inFlight, long stallNanos) {
        super("queue " + queue + ": " + inFlight + " requests in flight and none completed within "
                + stallNanos / 1_000_000 + " ms (--stall-timeout)");
    }
}
