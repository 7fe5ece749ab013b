package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A queue is broken and no longer served: the driver wrote something no driver may (a ring violation), its memory
 * faulted, or the thread serving it died or stopped answering. Emitted once per break, where it is reported.
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

    /** Where a break is reported: once per break, never per buffer. */
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
