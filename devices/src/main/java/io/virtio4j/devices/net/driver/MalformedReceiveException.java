package io.virtio4j.devices.net.driver;

/**
 * The device returned receive buffers the driver cannot make a frame of: a first buffer shorter than the
 * virtio_net_hdr, a num_buffers out of range (or not 1 without merged buffers), a frame longer than
 * {@link NetDriver#MAX_RECEIVED}.
 */
public final class MalformedReceiveException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int ring;

    MalformedReceiveException(int ring, String reason) {
        super("receive ring " + ring + ": " + reason);
        this.ring = ring;
    }

    /** The receive ring concerned. */
    public int ring() {
        return ring;
    }
}
