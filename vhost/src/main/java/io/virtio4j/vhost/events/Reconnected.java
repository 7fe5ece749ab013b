package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

import java.nio.file.Path;

/**
 * A front-end session's attempt to reconnect to its back-end ({@code FrontendSession.reconnect}, which
 * {@code drive blk --reconnect} retries until one succeeds): from the old connection's stop to the new one's start.
 */
@Name("io.virtio4j.Reconnected")
@Label("Reconnect")
@Category({"virtio4j", "vhost-user front-end"})
@Description("A front-end reconnected to its back-end, or tried: the duration is the whole attempt")
@StackTrace(false)
public final class Reconnected extends Event {
    @Label("Socket")
    String socket;

    @Label("Rings")
    int rings;

    @Label("Inflight Area")
    @Description("The back-end's inflight area was handed over (it resubmits); else the session offered again what was in flight")
    boolean inflightArea;

    @Label("In Flight")
    @Description("Buffers the driver had in flight across the reconnection")
    long inFlight;

    @Label("Succeeded")
    boolean succeeded;

    @Label("Failure")
    @Description("Why the attempt failed (the exception), or null")
    String failure;

    /** Starts timing an attempt; {@link #finish} commits it. Null when nothing records it. */
    public static Reconnected attempt(Path socket, int rings, boolean inflightArea) {
        Reconnected e = new Reconnected();
        if (!e.isEnabled()) {
            return null;
        }
        e.begin();
        e.socket = socket.toString();
        e.rings = rings;
        e.inflightArea = inflightArea;
        return e;
    }

    /** Ends the attempt {@link #attempt} started ({@code e} null: nothing records it): {@code failure} null for a success. */
    public static void finish(Reconnected e, long inFlight, Throwable failure) {
        if (e == null) {
            return;
        }
        e.end();
        if (e.shouldCommit()) {
            e.inFlight = inFlight;
            e.succeeded = failure == null;
            e.failure = failure == null ? null : failure.getClass().getName() + ": " + failure.getMessage();
            e.commit();
        }
    }
}
