package io.virtio4j.vhost.backend;

/** A device refuses a SET_CONFIG write: names the offset and length written and why. */
public final class ConfigWriteRefusedException extends Exception {
    private static final long serialVersionUID = 1L;

    private final long offset;
    private final int length;

    public ConfigWriteRefusedException(long offset, int length, String reason) {
        super("config write of " + length + " bytes at offset " + offset + ": " + reason);
        this.offset = offset;
        this.length = length;
    }

    public long offset() {
        return offset;
    }

    public int length() {
        return length;
    }
}
