package io.virtio4j.devices.net;

/** What the net device does with the frames the guest transmits. */
public enum NetMode {
    /** Count and drop. */
    RXONLY,
    /** Send each frame back to the guest on the receive queue of the same pair, with the MAC addresses swapped. */
    MACSWAP,
    /** Send each frame back unchanged. */
    LOOPBACK
}
