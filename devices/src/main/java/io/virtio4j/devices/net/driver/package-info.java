/**
 * The driver side of virtio-net over vhost-user ({@link io.virtio4j.devices.net.driver.NetDriver}): guest memory,
 * rings and buffer pools of a guest's virtio-net driver, set up through our own vhost-user front-end. Drives any
 * vhost-user net back-end from this JVM: ours embedded in process or over a socket, or another implementation.
 */
package io.virtio4j.devices.net.driver;
