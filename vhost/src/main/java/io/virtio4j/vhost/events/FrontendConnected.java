package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** The back-end starts serving a front-end's connection. */
@Name("io.virtio4j.FrontendConnected")
@Label("Front-end Connected")
@Category({"virtio4j", "vhost-user back-end"})
@Description("The back-end starts serving a front-end's connection")
@StackTrace(false)
public final class FrontendConnected extends Event {
    @Label("Peer")
    @Description("The socket and the connection's number")
    String peer;

    /** The connection's thread, before its first message. */
    public static void emit(String peer) {
        FrontendConnected e = new FrontendConnected();
        if (e.shouldCommit()) {
            e.peer = peer;
            e.commit();
        }
    }
}
