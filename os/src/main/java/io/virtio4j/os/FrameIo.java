package io.virtio4j.os;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * read(2) and write(2) of whole frames on one non-blocking descriptor, allocation-free: the argument of each
 * direction lives in a field that a call object built once reads, so a call captures nothing. One reading
 * thread and one writing thread at a time.
 *
 * <p>Each call is made without errno capture first ({@link Native#callUncaptured} says why: the capture allocates
 * until C2 has compiled the caller), and only when it failed again with errno captured, to learn why. Making a
 * failed read or write again is harmless: a failed read took no frame and a failed write gave none; if the second
 * attempt succeeds (a frame arrived, the queue drained meanwhile) its result is as good as the first would have
 * been. The cost is one extra system call per EAGAIN: where a drain of the tap ends on one (the read(2) path of
 * {@link FrameReadBatch}, without io_uring) and where a full port refuses a write.
 */
final class FrameIo {
    private static final MethodHandle READ = Native.downcallErrno("read", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle WRITE = Native.downcallErrno("write", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle READ_UNCAPTURED = Native.downcall("read", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle WRITE_UNCAPTURED = Native.downcall("write", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);

    private final String readName;
    private final String writeName;
    private final Native.Call readCall;
    private final Native.Call writeCall;
    private final Native.Call readUncaptured;
    private final Native.Call writeUncaptured;
    private MemorySegment readBuffer;
    private long readCapacity;
    private MemorySegment writeFrame;
    private long writeLength;

    FrameIo(FileDescriptor fd, String what) {
        this.readName = "read(" + what + ")";
        this.writeName = "write(" + what + ")";
        this.readCall = st -> (long) READ.invokeExact(st, fd.fd(), readBuffer, readCapacity);
        this.writeCall = st -> (long) WRITE.invokeExact(st, fd.fd(), writeFrame, writeLength);
        this.readUncaptured = st -> (long) READ_UNCAPTURED.invokeExact(fd.fd(), readBuffer, readCapacity);
        this.writeUncaptured = st -> (long) WRITE_UNCAPTURED.invokeExact(fd.fd(), writeFrame, writeLength);
    }

    long read(MemorySegment buffer, long capacity) {
        check(buffer, capacity);
        readBuffer = buffer;
        readCapacity = capacity;
        try {
            long n = Native.callUncaptured(readName, readUncaptured);
            return n >= 0 ? n : Native.callOrErrno(readName, readCall);
        } finally {
            readBuffer = null; // do not keep a caller's segment reachable
        }
    }

    long write(MemorySegment frame, long length) {
        check(frame, length);
        writeFrame = frame;
        writeLength = length;
        try {
            long n = Native.callUncaptured(writeName, writeUncaptured);
            return n >= 0 ? n : Native.callOrErrno(writeName, writeCall);
        } finally {
            writeFrame = null;
        }
    }

    private static void check(MemorySegment s, long length) {
        // The kernel gets a raw pointer: only native memory, and never past the segment's end.
        if (!s.isNative()) {
            throw new IllegalArgumentException("frame I/O needs a native segment");
        }
        if (length < 0 || length > s.byteSize()) {
            throw new IndexOutOfBoundsException("length " + length + " outside a segment of " + s.byteSize() + " bytes");
        }
    }
}
