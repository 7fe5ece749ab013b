package io.virtio4j.vhost.events;

import io.virtio4j.core.device.QueueState;
import io.virtio4j.core.layout.RingFormat;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A ring was handed to the device, started at its base. */
@Name("io.virtio4j.RingStarted")
@Label("Ring Started")
@Category({"virtio4j", "Rings"})
@Description("A ring started: its format, size and the state it resumed at")
@StackTrace(false)
public final class RingStarted extends Event {
    @Label("Queue")
    int queue;

    @Label("Format")
    @Description("split or packed")
    String format;

    @Label("Size")
    @Description("Entries in the ring (SET_VRING_NUM)")
    int size;

    @Label("Next Avail")
    @Description("The position of the next buffer the device takes")
    int nextAvail;

    @Label("Avail Wrap Counter")
    @Description("Packed rings: the driver wrap counter at that position; split rings: true")
    boolean availWrap;

    @Label("Next Used")
    @Description("The position of the next used entry the device writes")
    int nextUsed;

    @Label("Used Wrap Counter")
    @Description("Packed rings: the device wrap counter at that position; split rings: true")
    boolean usedWrap;

    @Label("Inflight Tracked")
    @Description("The ring records what it takes in an inflight area (INFLIGHT_SHMFD)")
    boolean inflight;

    @Label("Dirty Logging")
    @Description("The ring marks what it writes in the dirty log (VHOST_F_LOG_ALL and a log)")
    boolean dirtyLogging;

    /** Control thread, once the device took the ring. */
    public static void emit(int queue, RingFormat format, int size, QueueState at, boolean inflight, boolean dirtyLogging) {
        RingStarted e = new RingStarted();
        if (e.shouldCommit()) {
            e.queue = queue;
            e.format = Rings.name(format);
            e.size = size;
            e.nextAvail = at.nextAvail();
            e.availWrap = at.availWrap();
            e.nextUsed = at.nextUsed();
            e.usedWrap = at.usedWrap();
            e.inflight = inflight;
            e.dirtyLogging = dirtyLogging;
            e.commit();
        }
    }
}
