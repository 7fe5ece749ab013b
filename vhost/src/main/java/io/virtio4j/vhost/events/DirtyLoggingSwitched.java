package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** VHOST_F_LOG_ALL alone was set or cleared (a migration starts or ends): the started rings restart. */
@Name("io.virtio4j.DirtyLoggingSwitched")
@Label("Dirty Logging Switched")
@Category({"virtio4j", "vhost-user back-end"})
@Description("SET_FEATURES switched VHOST_F_LOG_ALL alone on or off (a migration's start or end)")
@StackTrace(false)
public final class DirtyLoggingSwitched extends Event {
    @Label("On")
    @Description("VHOST_F_LOG_ALL is negotiated now")
    boolean on;

    @Label("Log Mapped")
    @Description("A log (SET_LOG_BASE) the rings may log in is mapped: without one (none given, or a stale one the"
            + " front-end dropped when it stopped every ring) rings with the log flag wait for a new one")
    boolean logMapped;

    /** Control thread, before the started rings restart logging (or no longer). */
    public static void emit(boolean on, boolean logMapped) {
        DirtyLoggingSwitched e = new DirtyLoggingSwitched();
        if (e.shouldCommit()) {
            e.on = on;
            e.logMapped = logMapped;
            e.commit();
        }
    }
}
