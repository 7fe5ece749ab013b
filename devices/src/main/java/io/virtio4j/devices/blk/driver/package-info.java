/**
 * The driver side of virtio-blk over vhost-user ({@link io.virtio4j.devices.blk.driver.BlkDriver}): request slots,
 * chains and completions of a guest's virtio-blk driver, over a {@link io.virtio4j.vhost.frontend.FrontendSession}.
 * Drives any vhost-user-blk back-end from this JVM: qemu-storage-daemon, SPDK, ours.
 */
package io.virtio4j.devices.blk.driver;
