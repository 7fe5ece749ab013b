package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A front-end's connection ended and the back-end released what it held for it. */
@Name("io.virtio4j.FrontendDisconnected")
@Label("Front-end Disconnected")
@Category({"virtio4j", "vhost-user back-end"})
@Description("A front-end's connection ended: how, and after how many messages")
@StackTrace(false)
public final class FrontendDisconnected extends Event {
    @Label("Peer")
    String peer;

    @Label("End")
    @Description("PEER_CLOSED (the front-end closed it), PROTOCOL_ERROR (the back-end closed it), IO_ERROR (the socket"
            + " failed), or FAILED (releasing the device failed)")
    String end;

    @Label("Messages")
    @Description("Messages the front-end sent on the connection")
    long messages;

    /** The connection's thread, once the session released the device (the rings' RingStopped come first). */
    public static void emit(String peer, String end, long messages) {
        FrontendDisconnected e = new FrontendDisconnected();
        if (e.shouldCommit()) {
            e.peer = peer;
            e.end = end;
            e.messages = messages;
            e.commit();
        }
    }
}
