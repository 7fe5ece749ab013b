package io.virtio4j.devices.blk;

/**
 * The device's write cache mode, the configuration space's {@code writeback} field: set by the control thread
 * (SET_CONFIG, negotiation, reset), read by every queue thread for each write. Volatile: a driver that switches to
 * writethrough expects every write it sends afterwards to be made durable before it completes.
 */
final class WriteCache {
    private volatile boolean writeback = true;

    boolean writeback() {
        return writeback;
    }

    void writeback(boolean on) {
        writeback = on;
    }
}
