package io.virtio4j.vhost.protocol;

/**
 * Front-end to back-end vhost-user requests this back-end knows, with the payload each must carry.
 *
 * <p>{@code minSize}/{@code maxSize} bound the payload the header may announce; a size outside them is a
 * malformed message. {@code fds} is how many file descriptors may come with it ({@link Fds#PER_REGION}: one
 * per memory region; {@link Fds#UNLESS_NOFD}: one unless the payload's NOFD bit is set).
 */
public enum Request {
    GET_FEATURES(1, 0, 0, 0, true),
    SET_FEATURES(2, U64.SIZE, U64.SIZE, 0, false),
    SET_OWNER(3, 0, 0, 0, false),
    RESET_OWNER(4, 0, 0, 0, false),
    SET_MEM_TABLE(5, MemoryTableDescription.HEADER_SIZE, MemoryTableDescription.MAX_SIZE, Fds.PER_REGION, false),
    SET_LOG_BASE(6, LogDescription.SIZE, LogDescription.SIZE, 1, true),
    SET_LOG_FD(7, 0, 0, 1, false),
    SET_VRING_NUM(8, VringState.SIZE, VringState.SIZE, 0, false),
    SET_VRING_ADDR(9, VringAddress.SIZE, VringAddress.SIZE, 0, false),
    SET_VRING_BASE(10, VringState.SIZE, VringState.SIZE, 0, false),
    GET_VRING_BASE(11, VringState.SIZE, VringState.SIZE, 0, true),
    SET_VRING_KICK(12, VringFd.SIZE, VringFd.SIZE, Fds.UNLESS_NOFD, false),
    SET_VRING_CALL(13, VringFd.SIZE, VringFd.SIZE, Fds.UNLESS_NOFD, false),
    SET_VRING_ERR(14, VringFd.SIZE, VringFd.SIZE, Fds.UNLESS_NOFD, false),
    GET_PROTOCOL_FEATURES(15, 0, 0, 0, true),
    SET_PROTOCOL_FEATURES(16, U64.SIZE, U64.SIZE, 0, false),
    GET_QUEUE_NUM(17, 0, 0, 0, true),
    SET_VRING_ENABLE(18, VringState.SIZE, VringState.SIZE, 0, false),
    SEND_RARP(19, 8, 8, 0, false),
    NET_SET_MTU(20, 8, 8, 0, false),
    SET_BACKEND_REQ_FD(21, 0, 0, 1, false),
    IOTLB_MSG(22, 32, 32, 0, true),
    SET_VRING_ENDIAN(23, 8, 8, 0, false),
    GET_CONFIG(24, ConfigPayload.HEADER_SIZE, ConfigPayload.MAX_SIZE, 0, true),
    SET_CONFIG(25, ConfigPayload.HEADER_SIZE, ConfigPayload.MAX_SIZE, 0, false),
    GET_INFLIGHT_FD(31, InflightDescription.SIZE, InflightDescription.SIZE, 0, true),
    SET_INFLIGHT_FD(32, InflightDescription.SIZE, InflightDescription.SIZE, 1, false),
    RESET_DEVICE(34, 0, 0, 0, false),
    VRING_KICK(35, 8, 8, 0, false),
    GET_MAX_MEM_SLOTS(36, 0, 0, 0, true),
    ADD_MEM_REG(37, SingleMemoryRegion.SIZE, SingleMemoryRegion.SIZE, 1, false),
    REM_MEM_REG(38, SingleMemoryRegion.SIZE, SingleMemoryRegion.SIZE, 1, false),
    SET_STATUS(39, U64.SIZE, U64.SIZE, 0, false),
    GET_STATUS(40, 0, 0, 0, true);

    /** Largest payload any known request may carry: a full config message. */
    public static final int MAX_PAYLOAD = ConfigPayload.MAX_SIZE;
    /** Most file descriptors one message may carry. */
    public static final int MAX_FDS = 8;

    /** Special {@link #fds()} values. */
    public static final class Fds {
        private Fds() {
        }

        /** One fd per memory region. */
        public static final int PER_REGION = -1;
        /** One fd unless the NOFD bit (0x100) of the u64 payload is set. */
        public static final int UNLESS_NOFD = -2;
    }

    private static final Request[] BY_CODE = new Request[64];

    static {
        for (Request r : values()) {
            BY_CODE[r.code] = r;
        }
    }

    private final int code;
    private final int minSize;
    private final int maxSize;
    private final int fds;
    private final boolean hasReply;

    Request(int code, int minSize, int maxSize, int fds, boolean hasReply) {
        this.code = code;
        this.minSize = minSize;
        this.maxSize = maxSize;
        this.fds = fds;
        this.hasReply = hasReply;
    }

    public int code() {
        return code;
    }

    public int minSize() {
        return minSize;
    }

    public int maxSize() {
        return maxSize;
    }

    /** Exact fd count, or {@link Fds#PER_REGION} / {@link Fds#UNLESS_NOFD}. */
    public int fds() {
        return fds;
    }

    /**
     * Whether the request always gets a reply (not just a REPLY_ACK): the one place that says so. The front-end
     * waits for this reply, and asks for a REPLY_ACK (NEED_REPLY) only on the requests without one.
     */
    public boolean hasReply() {
        return hasReply;
    }

    /** The request with this code, or null when this back-end does not know it. */
    public static Request of(int code) {
        return code > 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** Name for logs, also for unknown codes. */
    public static String nameOf(int code) {
        Request r = of(code);
        return r != null ? r.name() : "UNKNOWN(" + Integer.toUnsignedString(code) + ")";
    }
}
