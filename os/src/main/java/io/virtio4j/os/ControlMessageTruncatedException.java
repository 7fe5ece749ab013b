package io.virtio4j.os;

/**
 * recvmsg received more file descriptors than the caller made room for (the kernel reported MSG_CTRUNC, or
 * the control buffer's rounding let one more in). The descriptors that did arrive were closed; the message's
 * bytes were consumed, so the stream is out of step and the connection should be dropped.
 */
public final class ControlMessageTruncatedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ControlMessageTruncatedException(String call, int room, int arrived, boolean kernelTruncated) {
        super(call + ": peer sent more file descriptors than the " + room + " there was room for; "
                + arrived + " arrived and were closed" + (kernelTruncated ? ", the rest were dropped (MSG_CTRUNC)" : ""));
    }
}
