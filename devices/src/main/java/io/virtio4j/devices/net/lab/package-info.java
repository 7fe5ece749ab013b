/**
 * Plumbing for tests and experiments of the net device with real traffic, not used by the device itself: a
 * virtio-net guest driven through our own vhost-user front-end ({@link io.virtio4j.devices.net.lab.NetGuest}), a
 * back-end served in-process over a socket pair ({@link io.virtio4j.devices.net.lab.InProcessBackend}), a network
 * namespace holding the tap ({@link io.virtio4j.devices.net.lab.TapNamespace}, needs root and iproute2), the UDP
 * tool run inside it ({@link io.virtio4j.devices.net.lab.UdpTool}) and the checksummed datagrams both sides
 * exchange ({@link io.virtio4j.devices.net.lab.UdpFrames}).
 */
package io.virtio4j.devices.net.lab;
