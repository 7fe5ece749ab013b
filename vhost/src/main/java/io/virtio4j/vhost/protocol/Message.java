package io.virtio4j.vhost.protocol;

import io.virtio4j.os.FileDescriptor;

import java.lang.foreign.MemorySegment;

/**
 * One received front-end message: header fields, the payload (exactly {@code size} bytes, native byte order)
 * and the file descriptors that came with it. The message owns the descriptors: a handler that keeps one
 * calls {@link #takeFd(int)}; {@link #closeUntakenFds()} closes the rest.
 */
public final class Message {
    private final int request;
    private final int flags;
    private final MemorySegment payload;
    private final FileDescriptor[] fds;

    public Message(int request, int flags, MemorySegment payload, FileDescriptor[] fds) {
        this.request = request;
        this.flags = flags;
        this.payload = payload;
        this.fds = fds;
    }

    public int request() {
        return request;
    }

    public String name() {
        return Request.nameOf(request);
    }

    public int flags() {
        return flags;
    }

    public boolean needReply() {
        return (flags & ProtocolFeatures.FLAG_NEED_REPLY) != 0;
    }

    public long size() {
        return payload.byteSize();
    }

    public int fdCount() {
        return fds.length;
    }

    /** The payload, for the records of this package to decode. */
    public MemorySegment payload() {
        return payload;
    }

    /** Hands descriptor {@code i} over to the caller, who must close it. */
    public FileDescriptor takeFd(int i) {
        FileDescriptor fd = fds[i];
        fds[i] = null;
        return fd;
    }

    public void closeUntakenFds() {
        for (int i = 0; i < fds.length; i++) {
            if (fds[i] != null) {
                fds[i].close();
                fds[i] = null;
            }
        }
    }
}
