package io.virtio4j.vhost.frontend;

/** A {@link GuestMemory} carve asked for more bytes than are left: a sizing error of the driver that carves. */
public final class GuestMemoryExhaustedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    GuestMemoryExhaustedException(long asked, long alignment, long used, long size) {
        super("guest memory exhausted: " + asked + " bytes aligned to " + alignment + " asked, " + used + " of "
                + size + " bytes carved already");
    }
}
