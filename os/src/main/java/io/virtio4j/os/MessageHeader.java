package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** A struct msghdr with one struct iovec, for sendmsg/recvmsg on a connected socket (no msg_name). */
final class MessageHeader {
    // glibc x86-64 / aarch64: msg_iovlen and msg_controllen are size_t, with padding after msg_namelen and
    // msg_flags, 56 bytes in all.
    private static final StructLayout MSGHDR = MemoryLayout.structLayout(
            ADDRESS.withName("msg_name"), JAVA_INT.withName("msg_namelen"), MemoryLayout.paddingLayout(4),
            ADDRESS.withName("msg_iov"), JAVA_LONG.withName("msg_iovlen"),
            ADDRESS.withName("msg_control"), JAVA_LONG.withName("msg_controllen"),
            JAVA_INT.withName("msg_flags"), MemoryLayout.paddingLayout(4));
    private static final long MSG_IOV = MSGHDR.byteOffset(groupElement("msg_iov"));
    private static final long MSG_IOVLEN = MSGHDR.byteOffset(groupElement("msg_iovlen"));
    private static final long MSG_CONTROL = MSGHDR.byteOffset(groupElement("msg_control"));
    private static final long MSG_CONTROLLEN = MSGHDR.byteOffset(groupElement("msg_controllen"));
    private static final long MSG_FLAGS = MSGHDR.byteOffset(groupElement("msg_flags"));

    private static final StructLayout IOVEC = MemoryLayout.structLayout(
            ADDRESS.withName("iov_base"), JAVA_LONG.withName("iov_len"));
    private static final long IOV_BASE = IOVEC.byteOffset(groupElement("iov_base"));
    private static final long IOV_LEN = IOVEC.byteOffset(groupElement("iov_len"));

    private final MemorySegment msg;
    private final MemorySegment iov;

    /** A zeroed header in {@code arena} whose data and control are yet to be set. */
    MessageHeader(Arena arena) {
        msg = arena.allocate(MSGHDR);
        iov = arena.allocate(IOVEC);
        msg.set(ADDRESS, MSG_IOV, iov);
        msg.set(JAVA_LONG, MSG_IOVLEN, 1L);
    }

    /** The struct itself, to pass to sendmsg/recvmsg. */
    MemorySegment segment() {
        return msg;
    }

    /** Points the iovec at the first {@code length} bytes of {@code data}, which must be native memory. */
    void data(MemorySegment data, long length) {
        iov.set(ADDRESS, IOV_BASE, data);
        iov.set(JAVA_LONG, IOV_LEN, length);
    }

    /** Sets the control (ancillary data) buffer; {@link MemorySegment#NULL} for none. */
    void control(MemorySegment control) {
        msg.set(ADDRESS, MSG_CONTROL, control);
        msg.set(JAVA_LONG, MSG_CONTROLLEN, control.byteSize());
    }

    /** After recvmsg: how many control bytes the kernel filled in. */
    long controlLength() {
        return msg.get(JAVA_LONG, MSG_CONTROLLEN);
    }

    /** After recvmsg: the MSG_* flags the kernel reported (MSG_CTRUNC, ...). */
    int flags() {
        return msg.get(JAVA_INT, MSG_FLAGS);
    }
}
