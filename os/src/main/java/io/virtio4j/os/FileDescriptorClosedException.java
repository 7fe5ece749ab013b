package io.virtio4j.os;

/** A {@link FileDescriptor} was used after it was closed or released. */
public final class FileDescriptorClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public FileDescriptorClosedException(int fd) {
        super("fd " + fd + " is closed or released");
    }
}
