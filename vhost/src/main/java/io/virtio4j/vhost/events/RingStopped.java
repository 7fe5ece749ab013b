package io.virtio4j.vhost.events;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.layout.RingFormat;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** The device let a started ring go; its base is where it resumes. */
@Name("io.virtio4j.RingStopped")
@Label("Ring Stopped")
@Category({"virtio4j", "Rings"})
@Description("A started ring stopped: why, and the state it stopped at (its base)")
@StackTrace(false)
public final class RingStopped extends Event {
    @Label("Queue")
    int queue;

    @Label("Format")
    @Description("split or packed")
    String format;

    @Label("Size")
    int size;

    @Label("Cause")
    @Description("What stopped it: the request (GET_VRING_BASE, SET_VRING_KICK, SET_VRING_ADDR, SET_MEM_TABLE, "
            + "ADD_MEM_REG, REM_MEM_REG, SET_FEATURES, SET_LOG_BASE, SET_STATUS, RESET_DEVICE) or \"connection closed\"")
    String cause;

    @Label("Base")
    @Description("The base GET_VRING_BASE answers (split: the next avail index; packed: vhost-user's encoding of both positions)")
    long base;

    @Label("Next Avail")
    int nextAvail;

    @Label("Next Used")
    int nextUsed;

    @Label("Broken")
    @Description("The queue was broken when it stopped")
    boolean broken;

    /** Control thread, once the device gave the ring back. */
    public static void emit(int queue, RingFormat format, int size, String cause, long base, QueueState at,
                            boolean broken) {
        RingStopped e = new RingStopped();
        if (e.shouldCommit()) {
            e.queue = queue;
            e.format = Rings.name(format);
            e.size = size;
            e.cause = cause;
            e.base = base;
            e.nextAvail = at.nextAvail();
            e.nextUsed = at.nextUsed();
            e.broken = broken;
            e.commit();
        }
    }
}
