package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A queue is broken and no longer served: the driver wrote something no driver may (a ring violation), its memory
 * faulted, or the thread serving it died or stopped answering. Emitted where the break is reported, once for each
 * report, never per buffer: by a queue runner when it signals the front-end's error eventfd (the queue's thread after
 * the pass that found the break, or the control thread for a worker that died or stopped answering); a queue is
 * reported once per attach, so a ring started again on a runner that cannot serve it is reported again. Or by the
 * control thread stopping the ring (GET_VRING_BASE), when its last publication broke it (a memory fault, a dirty log
 * too small): the front-end is taking the ring back then, and its error eventfd is not signalled. The thread that
 * emitted it is the event's own (JFR's event thread).
 */
@Name("io.virtio4j.QueueBroken")
@Label("Queue Broken")
@Category({"virtio4j", "Rings"})
@Description("A queue broke and is no longer served, and why (the exception that broke it)")
@StackTrace(false)
public final class QueueBroken extends Event {
    @Label("Queue")
    int queue;

    @Label("Runner")
    @Description("The queue runner serving the queue (its name, also its thread's), or null: the control thread found"
            + " the break stopping the ring")
    String runner;

    @Label("Exception")
    @Description("The exception's class")
    String exceptionType;

    @Label("Message")
    String message;

    /** Where a break is reported (see the class comment); {@code runner} null when no runner reports it. */
    public static void emit(int queue, String runner, Throwable why) {
        QueueBroken e = new QueueBroken();
        if (e.shouldCommit()) {
            e.queue = queue;
            e.runner = runner;
            e.exceptionType = why == null ? null : why.getClass().getName();
            e.message = why == null ? null : why.getMessage();
            e.commit();
        }
    }
}
