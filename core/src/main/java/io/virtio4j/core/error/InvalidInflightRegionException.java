package io.virtio4j.core.error;

/**
 * A queue's inflight region (vhost-user's INFLIGHT_SHMFD area, which the front-end can write) holds something no
 * back-end wrote: a descriptor count that is not the queue size, an index beyond the queue, a batch longer than
 * the ring, a link loop. Names the field, e.g. {@code "inflight.desc[7].next"}, and its value; or {@code "used.idx"}
 * when the ring's used index went back behind the region's (the guest's doing, not the region's). The queue is
 * broken and nothing is resubmitted from the region.
 */
public final class InvalidInflightRegionException extends RingViolationException {
    private static final long serialVersionUID = 1L;

    public InvalidInflightRegionException(String field, long value, String reason) {
        super(field, value, reason);
    }
}
