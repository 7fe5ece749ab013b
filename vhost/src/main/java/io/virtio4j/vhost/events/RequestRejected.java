package io.virtio4j.vhost.events;

import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** The back-end refused a front-end's request (a field that breaks the protocol) or message (bad framing). */
@Name("io.virtio4j.RequestRejected")
@Label("Request Rejected")
@Category({"virtio4j", "vhost-user back-end"})
@Description("A front-end's request was refused: the request, the field and its value, why, and whether the connection closed")
@StackTrace(false)
public final class RequestRejected extends Event {
    @Label("Peer")
    String peer;

    @Label("Request")
    String request;

    @Label("Field")
    String field;

    @Label("Value")
    long value;

    @Label("Message")
    String message;

    @Label("Connection Closed")
    @Description("The refusal could not be answered (no error form, no REPLY_ACK): the connection closed")
    boolean closed;

    /** The connection's thread, as it answers the refusal or closes. */
    public static void emit(String peer, VhostUserProtocolException why, boolean closed) {
        RequestRejected e = new RequestRejected();
        if (e.shouldCommit()) {
            e.peer = peer;
            e.request = why.request();
            e.field = why.field();
            e.value = why.value();
            e.message = why.getMessage();
            e.closed = closed;
            e.commit();
        }
    }
}
