package io.virtio4j.devices.net;

/** virtio-net feature bits, the 12-byte virtio_net_hdr and the config space layout (virtio 1.x, 5.1). */
public final class NetFeatures {
    private NetFeatures() {
    }

    public static final int MTU = 3;
    public static final int MAC = 5;
    public static final int MRG_RXBUF = 15;
    public static final int STATUS = 16;
    public static final int CTRL_VQ = 17;
    public static final int MQ = 22;

    /** virtio_net_hdr with VERSION_1: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset, num_buffers. */
    public static final int HDR_LEN = 12;
    public static final int HDR_NUM_BUFFERS = 10;

    public static final int CONFIG_MAC = 0;
    public static final int CONFIG_STATUS = 6;
    public static final int CONFIG_MAX_PAIRS = 8;
    public static final int CONFIG_MTU = 10;
    public static final int CONFIG_LEN = 12;

    public static final int STATUS_LINK_UP = 1;

    /** Ethernet: destination MAC, source MAC, ethertype. */
    public static final int ETH_HEADER = 14;
}
