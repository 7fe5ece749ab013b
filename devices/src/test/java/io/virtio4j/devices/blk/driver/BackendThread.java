package io.virtio4j.devices.blk.driver;

import io.virtio4j.vhost.backend.VhostUserBackendEndpoint;

import java.nio.file.Path;

/** The blk driver tests' back-end: an endpoint serving on a daemon thread the test joins once it closed the endpoint. */
final class BackendThread {
    private BackendThread() {
    }

    /**
     * Starts {@code endpoint} at {@code path}: listening (the driver connects), or, with {@code connect}, connecting
     * to a listening driver. A failure ends the thread with an {@link IllegalStateException} (the test then finds the
     * driver without a back-end).
     */
    static Thread start(VhostUserBackendEndpoint endpoint, Path path, boolean connect) {
        return Thread.ofPlatform().daemon().start(() -> {
            try {
                if (connect) {
                    endpoint.connect(path);
                } else {
                    endpoint.listen(path);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }
}
