package io.virtio4j.devices.net;

/** What the net device does with the frames the guest transmits, and where received frames come from. */
public enum NetMode {
    /** Count and drop. */
    RXONLY,
    /** Send each frame back to the guest on the receive queue of the same pair, with the MAC addresses swapped. */
    MACSWAP,
    /** Send each frame back unchanged. */
    LOOPBACK,
    /**
     * Bridge the queues to a tap device: frames the guest sends are written to the tap, frames the tap
     * transmits are delivered on the receive queue (see {@link TapPolling} for how the tap is watched).
     */
    TAP
}
