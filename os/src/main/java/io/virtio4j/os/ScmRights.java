package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** SCM_RIGHTS control messages: file descriptors carried by sendmsg/recvmsg on an AF_UNIX socket. */
final class ScmRights {
    private ScmRights() {
    }

    /** The most descriptors one message carries, as in vhost-user (VHOST_MEMORY_BASELINE_NREGIONS). */
    static final int MAX_FDS = 8;

    private static final int SOL_SOCKET = 1;
    private static final int SCM_RIGHTS = 1;
    private static final StructLayout CMSGHDR = MemoryLayout.structLayout(
            JAVA_LONG.withName("cmsg_len"), JAVA_INT.withName("cmsg_level"), JAVA_INT.withName("cmsg_type"));
    private static final long CMSG_LEN = CMSGHDR.byteOffset(groupElement("cmsg_len"));
    private static final long CMSG_LEVEL = CMSGHDR.byteOffset(groupElement("cmsg_level"));
    private static final long CMSG_TYPE = CMSGHDR.byteOffset(groupElement("cmsg_type"));
    private static final long HEADER = CMSGHDR.byteSize();

    /** A control buffer carrying {@code fds}, or {@link MemorySegment#NULL} when there are none. */
    static MemorySegment forSending(FileDescriptor[] fds, Arena arena) {
        if (fds.length == 0) {
            return MemorySegment.NULL;
        }
        MemorySegment control = arena.allocate(space(fds.length), CMSGHDR.byteAlignment());
        control.set(JAVA_LONG, CMSG_LEN, HEADER + (long) Integer.BYTES * fds.length);
        control.set(JAVA_INT, CMSG_LEVEL, SOL_SOCKET);
        control.set(JAVA_INT, CMSG_TYPE, SCM_RIGHTS);
        for (int i = 0; i < fds.length; i++) {
            control.set(JAVA_INT, HEADER + (long) Integer.BYTES * i, fds[i].fd());
        }
        return control;
    }

    /** A control buffer with room for at least {@code maxFds} descriptors, or NULL for none. */
    static MemorySegment forReceiving(int maxFds, Arena arena) {
        return maxFds == 0 ? MemorySegment.NULL : arena.allocate(space(maxFds), CMSGHDR.byteAlignment());
    }

    /**
     * Takes ownership of every descriptor in the first {@code length} bytes of a received control buffer. All
     * are wrapped before anything else can fail, so a caller that closes the list on error leaks none.
     */
    static List<FileDescriptor> received(MemorySegment control, long length) {
        List<FileDescriptor> fds = new ArrayList<>();
        long at = 0;
        while (at + HEADER <= length) {
            long cmsgLen = control.get(JAVA_LONG, at + CMSG_LEN);
            if (cmsgLen < HEADER) {
                break; // malformed; the kernel never writes this
            }
            long end = Math.min(at + cmsgLen, length);
            if (control.get(JAVA_INT, at + CMSG_LEVEL) == SOL_SOCKET && control.get(JAVA_INT, at + CMSG_TYPE) == SCM_RIGHTS) {
                for (long p = at + HEADER; p + Integer.BYTES <= end; p += Integer.BYTES) {
                    fds.add(FileDescriptor.adopt(control.get(JAVA_INT, p)));
                }
            }
            at += align(cmsgLen);
        }
        return fds;
    }

    /** CMSG_SPACE: header plus {@code fds} ints, rounded up to the header's alignment. */
    private static long space(int fds) {
        return HEADER + align((long) Integer.BYTES * fds);
    }

    private static long align(long n) {
        long a = CMSGHDR.byteAlignment();
        return (n + a - 1) & -a;
    }
}
