/**
 * The network lab the experiments set up around a tap and the tap tests share: iproute2 ({@code Commands}), a
 * network namespace holding a tap ({@code TapNamespace}), the UDP tool run inside it ({@code UdpTool}) and the
 * checksummed datagrams both ends check ({@code UdpFrames}). Product code, not test plumbing: {@code virtio4j
 * experiments} runs it from the CLI jar. Here, below {@code devices}, because the devices module's tap tests use it
 * too, and nothing of the library's own calls it.
 */
package io.virtio4j.os.netlab;
