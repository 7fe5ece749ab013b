package io.virtio4j.vhost.protocol;

import java.lang.foreign.MemorySegment;

/**
 * The payload of GET_INFLIGHT_FD and SET_INFLIGHT_FD (PROTOCOL_F_INFLIGHT_SHMFD): {@code u64 mmap_size;
 * u64 mmap_offset; u16 num_queues; u16 queue_size;} padded to 24 bytes by C alignment, which is what QEMU and
 * libvhost-user send (the 4 padding bytes are ignored on reading and zero on writing).
 *
 * <p>GET_INFLIGHT_FD asks with the sizes ({@code mmap_size} and {@code mmap_offset} 0) and is answered with the
 * area's size and offset and its fd; SET_INFLIGHT_FD gives that fd back with all four fields. Both ends use this
 * record; every field is unsigned and checked against its width.
 */
public record InflightDescription(long mmapSize, long mmapOffset, int numQueues, int queueSize) {
    public static final int SIZE = 24;

    public InflightDescription {
        if (numQueues < 0 || numQueues > 0xFFFF) {
            throw new IllegalArgumentException("num_queues " + numQueues + " does not fit a u16");
        }
        if (queueSize < 0 || queueSize > 0xFFFF) {
            throw new IllegalArgumentException("queue_size " + queueSize + " does not fit a u16");
        }
    }

    /** GET_INFLIGHT_FD's question: an area for {@code numQueues} queues of {@code queueSize}. */
    public static InflightDescription request(int numQueues, int queueSize) {
        return new InflightDescription(0, 0, numQueues, queueSize);
    }

    /**
     * GET_INFLIGHT_FD's answer when the back-end has no area to give: {@code mmap_size} 0 and no fd, the sizes
     * echoed (libvhost-user's answer when it cannot allocate). QEMU then carries on without inflight tracking, and
     * so does virtio4j's front-end ({@link #isNoArea}).
     */
    public static InflightDescription noArea(int numQueues, int queueSize) {
        return new InflightDescription(0, 0, numQueues, queueSize);
    }

    /** Whether this GET_INFLIGHT_FD answer says the back-end has no area ({@code mmap_size} 0). */
    public boolean isNoArea() {
        return mmapSize == 0;
    }

    /** @throws VhostUserProtocolException naming {@code size} when the payload is not exactly {@link #SIZE} bytes */
    public static InflightDescription decode(String request, MemorySegment payload) throws VhostUserProtocolException {
        Payloads.requireSize(request, payload, SIZE);
        return new InflightDescription(Payloads.u64(payload, 0), Payloads.u64(payload, 8),
                Payloads.u16(payload, 16), Payloads.u16(payload, 18));
    }

    public byte[] encode() {
        return Payloads.buffer(SIZE).putLong(mmapSize).putLong(mmapOffset).putShort((short) numQueues)
                .putShort((short) queueSize).putInt(0).array();
    }
}
