package io.virtio4j.vhost.protocol;

/**
 * A front-end message that breaks the vhost-user protocol: names the request, the field and the value.
 * The back-end answers it with an error (or closes the connection when no answer is possible) and keeps
 * serving.
 */
public final class VhostUserProtocolException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String request;
    private final String field;
    private final long value;

    public VhostUserProtocolException(String request, String field, long value, String reason) {
        super(request + ": " + field + "=" + value + " (0x" + Long.toHexString(value) + "): " + reason);
        this.request = request;
        this.field = field;
        this.value = value;
    }

    /** As above, for a refusal that {@code cause} explains (e.g. the device's). */
    public VhostUserProtocolException(String request, String field, long value, String reason, Throwable cause) {
        this(request, field, value, reason);
        initCause(cause);
    }

    public String request() {
        return request;
    }

    public String field() {
        return field;
    }

    public long value() {
        return value;
    }
}
