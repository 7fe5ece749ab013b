package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A queue is broken and no longer served: the driver wrote something no driver may (a ring violation), its memory
 * faulted, or the thread serving it died or stopped answering. Emitted once per queue, where the front-end is told
 * (its error eventfd signalled), by whichever thread tells it: the queue's thread after the pass that found the
 * break, or the control thread (a worker that stopped answering, a fault while stopping the ring).
 */
@Name("io.virtio4j.QueueBroken")
@Label("Queue Broken")
@Category({"virtio4j", "Rings"})
@Description("A queue broke and is no longer served, and why (the exception that broke it)")
@StackTrace(false)
public final class QueueBroken extends Event {
    @Label("Queue")
    int queue;

    @Label("Reported By")
    @Description("The queue thread that found it, or the control thread")
    String reporter;

    @Label("Exception")
    @Description("The exception's class")
    String exceptionType;

    @Label("Message")
    String message;

    /** Where a break is reported to the front-end: once per queue, never per buffer. */
    public static void emit(int queue, String reporter, Throwable why) {
        QueueBroken e = new QueueBroken();
        if (e.shouldCommit()) {
            e.queue = queue;
            e.reporter = reporter;
            e.exceptionType = why == null ? null : why.getClass().getName();
            e.message = why == null ? null : why.getMessage();
            e.commit();
        }
    }
}
