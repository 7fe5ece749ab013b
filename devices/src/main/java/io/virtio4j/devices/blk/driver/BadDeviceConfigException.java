package io.virtio4j.devices.blk.driver;

/** A virtio-blk configuration space field (GET_CONFIG) holds a value the driver cannot work with. */
public final class BadDeviceConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BadDeviceConfigException(String field, long value, String expected) {
        super("virtio-blk config " + field + " = " + value + " (" + expected + ")");
    }
}
