package io.virtio4j.devices.net;

/**
 * Where the frames the guest transmits go, and where the frames it receives come from: back to the guest itself
 * ({@link Reflect}, with what is done to each frame on the way), or a tap device ({@link Tap}).
 */
public sealed interface NetMode {
    /** Count and drop. */
    NetMode RXONLY = new Reflect(Reflection.DROP);
    /** Send each frame back on the receive queue of the same pair, with the MAC addresses swapped. */
    NetMode MACSWAP = new Reflect(Reflection.SWAP_MACS);
    /** Send each frame back unchanged. */
    NetMode LOOPBACK = new Reflect(Reflection.UNCHANGED);

    /** What a {@link Reflect} device does with a frame the guest transmitted. */
    enum Reflection {
        /** Counted and dropped: nothing is ever received. */
        DROP,
        /** Returned with destination and source MAC addresses swapped. */
        SWAP_MACS,
        /** Returned unchanged. */
        UNCHANGED
    }

    /** No outside world: frames from the guest come back to it on the receive queue of the same pair, or not at all. */
    record Reflect(Reflection reflection) implements NetMode {
        public Reflect {
            if (reflection == null) {
                throw new InvalidNetOptionException("mode", null, "a reflection is required");
            }
        }
    }

    /**
     * Bridged to a tap device: frames the guest sends are written to the tap, frames the tap transmits are
     * delivered on the receive queue.
     *
     * @param name    the tap's interface name (a {@code %d} lets the kernel number it)
     * @param polling how the tap is watched (see {@link TapPolling})
     */
    record Tap(String name, TapPolling polling) implements NetMode {
        public Tap {
            if (name == null || name.isEmpty()) {
                throw new InvalidNetOptionException("mode", name, "tap mode needs the tap's interface name");
            }
            if (polling == null) {
                polling = TapPolling.current();
            }
        }

        /** A tap watched as vhost-net does now ({@link TapPolling#current()}). */
        public Tap(String name) {
            this(name, TapPolling.current());
        }
    }
}
