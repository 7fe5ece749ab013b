package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A ring restarted over an inflight area found buffers an earlier back-end took and never returned. */
@Name("io.virtio4j.InflightResubmitted")
@Label("Inflight Resubmitted")
@Category({"virtio4j", "Rings"})
@Description("Buffers a lost back-end took and did not return, resubmitted from the ring's inflight region (INFLIGHT_SHMFD)")
@StackTrace(false)
public final class InflightResubmitted extends Event {
    @Label("Queue")
    int queue;

    @Label("Resubmitted")
    @Description("Buffers resubmitted")
    int count;

    /** Control thread, when the ring's restart found {@code count} > 0 buffers to resubmit. */
    public static void emit(int queue, int count) {
        InflightResubmitted e = new InflightResubmitted();
        if (e.shouldCommit()) {
            e.queue = queue;
            e.count = count;
            e.commit();
        }
    }
}
