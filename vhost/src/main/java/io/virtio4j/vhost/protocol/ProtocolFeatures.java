package io.virtio4j.vhost.protocol;

/** vhost-user protocol feature bits (GET/SET_PROTOCOL_FEATURES) and the vhost-only virtio feature bits. */
public final class ProtocolFeatures {
    private ProtocolFeatures() {
    }

    public static final int MQ = 0;
    public static final int LOG_SHMFD = 1;
    public static final int RARP = 2;
    public static final int REPLY_ACK = 3;
    public static final int MTU = 4;
    public static final int BACKEND_REQ = 5;
    public static final int CONFIG = 9;
    public static final int INFLIGHT_SHMFD = 12;
    public static final int RESET_DEVICE = 13;
    public static final int CONFIGURE_MEM_SLOTS = 15;
    public static final int STATUS = 16;

    /** Virtio feature bit 30, reused by vhost-user: the back-end speaks protocol features. */
    public static final int VHOST_USER_F_PROTOCOL_FEATURES = 30;
    /** Virtio feature bit 26: the back-end can log dirty pages. */
    public static final int VHOST_F_LOG_ALL = 26;

    /** Header flags. */
    public static final int VERSION = 0x1;
    public static final int VERSION_MASK = 0x3;
    public static final int FLAG_REPLY = 0x4;
    public static final int FLAG_NEED_REPLY = 0x8;

    /** What the back-end's session implements for every device, offered whatever the device. */
    public static final long SESSION = bit(REPLY_ACK) | bit(RESET_DEVICE) | bit(CONFIGURE_MEM_SLOTS) | bit(STATUS);
    /**
     * What a device may declare on top of {@link #SESSION}: MQ (GET_QUEUE_NUM answers with the device's queue
     * count), CONFIG (GET_CONFIG and SET_CONFIG reach the device's configuration space) and INFLIGHT_SHMFD (the
     * session keeps an inflight area and each queue records in it what it took: for a device that completes out of
     * order and whose front-end should survive the back-end's restart, such as blk).
     */
    public static final long DEVICE_DECLARABLE = bit(MQ) | bit(CONFIG) | bit(INFLIGHT_SHMFD);

    public static long bit(int feature) {
        return 1L << feature;
    }
}
